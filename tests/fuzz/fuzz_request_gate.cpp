// Fuzzes the HTTP request gate with raw request heads, as a client sends them.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/request_gate.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view head(reinterpret_cast<const char*>(data), size);
    const rocewatch::api::ApiOptions opts;
    const auto c = rocewatch::api::check_request_head(head, opts);
    using V = rocewatch::api::HeadCheck::Verdict;
    if (c.verdict == V::accept) {
        FUZZ_CHECK(c.head_bytes >= 4 && c.head_bytes <= head.size());
        FUZZ_CHECK(head.substr(c.head_bytes - 4, 4) == "\r\n\r\n");
        FUZZ_CHECK(c.head_bytes <= opts.max_header_bytes);
        // What follows the head is body: judging the head alone must give the same answer.
        FUZZ_CHECK(rocewatch::api::check_request_head(head.substr(0, c.head_bytes), opts).verdict == V::accept);
    } else if (c.verdict == V::reject) {
        FUZZ_CHECK(c.status >= 400 && c.status < 600);
        FUZZ_CHECK(rocewatch::api::status_reason(c.status) != nullptr);
        (void)rocewatch::api::to_string(c.reason);
    } else {
        // Still reading: only a head not yet over the size limit may be.
        FUZZ_CHECK(head.size() <= opts.max_header_bytes);
    }
    return 0;
}
