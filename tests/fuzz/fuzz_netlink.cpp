// Fuzzes the rtnetlink parsers: a buffer of RTM_NEWLINK/RTM_NEWADDR messages, as a dump reply.
#include <linux/netlink.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "daemon/netlink/parse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // Aligned copy: the kernel's buffers are, and the parsers cast to nlmsghdr/ifinfomsg.
    std::vector<uint32_t> buf((size + 3) / 4);
    if (size) std::memcpy(buf.data(), data, size);
    std::vector<rocewatch::Link> links;
    std::vector<std::pair<int, rocewatch::Address>> addrs;
    const auto* nlh = reinterpret_cast<const nlmsghdr*>(buf.data());
    int len = static_cast<int>(size);
    // NLMSG_OK is exactly the precondition parse.hpp states: nlmsg_len bytes are readable.
    for (; NLMSG_OK(nlh, len); nlh = NLMSG_NEXT(nlh, len)) {
        if (auto l = rocewatch::parse_link_message(nlh)) links.push_back(std::move(*l));
        if (auto a = rocewatch::parse_addr_message(nlh)) addrs.push_back(std::move(*a));
    }
    (void)rocewatch::assemble_links(std::move(links), addrs);
    return 0;
}
