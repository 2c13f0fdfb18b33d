// A bounded history of link transitions (admin up/down, carrier up/down) and address
// changes: pure bookkeeping, fed by the watcher from netlink events and dumps.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "daemon/model/snapshot.hpp"

namespace rocewatch {

class LinkHistory {
public:
    static constexpr size_t kDefaultLimit = 256;
    explicit LinkHistory(size_t limit = kDefaultLimit) : limit_(limit) {}

    // A link's state as an event or a dump reported it: records an admin or carrier
    // transition against the last state known for its ifindex (nothing the first time a
    // link is seen). With `addresses` (dumps only: link events carry none), records the
    // addresses it lost or gained as well.
    void observe_link(const Link& l, TimePoint at, bool addresses);
    // A dump's whole view: observe_link for each (with addresses); links gone are forgotten.
    void observe_view(const std::vector<Link>& view, TimePoint at);
    // Oldest first.
    std::vector<LinkEvent> events() const { return {events_.begin(), events_.end()}; }

private:
    struct Known {
        std::string name;
        bool admin_up = false;
        bool carrier = false;
        bool addresses_known = false;
        std::vector<std::string> addresses;  // "a.b.c.d/len"
    };
    void add(TimePoint at, const std::string& link, const char* what, std::string address = "");

    size_t limit_;
    std::map<int, Known> known_;
    std::deque<LinkEvent> events_;
};

}  // namespace rocewatch
