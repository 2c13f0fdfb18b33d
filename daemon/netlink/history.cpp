// A bounded history of link transitions and address changes: see history.hpp.
#include "daemon/netlink/history.hpp"

#include <algorithm>
#include <set>

namespace rocewatch {
namespace {

std::vector<std::string> address_texts(const Link& l) {
    std::vector<std::string> v;
    for (const auto& a : l.addresses)
        if (a.scope != "link") v.push_back(a.address + "/" + std::to_string(a.prefixlen));
    return v;
}

}  // namespace

void LinkHistory::add(TimePoint at, const std::string& link, const char* what, std::string address) {
    events_.push_back({.at = at, .link = link, .what = what, .address = std::move(address)});
    while (events_.size() > limit_) events_.pop_front();
}

void LinkHistory::observe_link(const Link& l, TimePoint at, bool addresses) {
    auto it = known_.find(l.ifindex);
    if (it == known_.end()) {
        Known k{.name = l.name, .admin_up = l.admin_up, .carrier = l.carrier};
        if (addresses) {
            k.addresses_known = true;
            k.addresses = address_texts(l);
        }
        known_.emplace(l.ifindex, std::move(k));
        return;
    }
    Known& k = it->second;
    k.name = l.name;
    // An admin-down takes the carrier with it: the admin change is what happened.
    if (k.admin_up != l.admin_up) add(at, l.name, l.admin_up ? "admin_up" : "admin_down");
    if (k.carrier != l.carrier && (l.admin_up || k.admin_up == l.admin_up))
        add(at, l.name, l.carrier ? "carrier_up" : "carrier_down");
    k.admin_up = l.admin_up;
    k.carrier = l.carrier;
    if (!addresses) return;
    const auto now = address_texts(l);
    if (k.addresses_known) {
        for (const auto& a : k.addresses)
            if (std::find(now.begin(), now.end(), a) == now.end()) add(at, l.name, "address_removed", a);
        for (const auto& a : now)
            if (std::find(k.addresses.begin(), k.addresses.end(), a) == k.addresses.end())
                add(at, l.name, "address_added", a);
    }
    k.addresses_known = true;
    k.addresses = now;
}

void LinkHistory::observe_view(const std::vector<Link>& view, TimePoint at) {
    std::set<int> present;
    for (const auto& l : view) {
        present.insert(l.ifindex);
        observe_link(l, at, true);
    }
    for (auto it = known_.begin(); it != known_.end();)
        it = present.count(it->first) ? std::next(it) : known_.erase(it);
}

}  // namespace rocewatch
