// Adds what only libibverbs knows (MTU, speed, width per port) to devices read from sysfs,
// and reads GID tables through it.
#include "daemon/sysfs/verbs.hpp"

#include <infiniband/verbs.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <exception>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <system_error>

namespace rocewatch {

namespace {

struct DeviceListFree {
    void operator()(ibv_device** list) const { ibv_free_device_list(list); }
};

struct ContextClose {
    void operator()(ibv_context* ctx) const { ibv_close_device(ctx); }
};

void note(VerbsResult& r, const std::string& what, int err) {
    ++r.errors;
    r.last_error = what + ": " + verbs_error_text(err);
}

// ibv_query_port returns the errno itself from providers, -1 with errno set from the old
// compat path; both end up here as a positive errno.
int query_errno(int rc) {
    if (rc > 0) return rc;
    if (rc == -1 && errno != 0) return errno;
    return rc < 0 ? -rc : EIO;
}

RdmaDevice* find_by_name(std::vector<RdmaDevice>& devices, const char* name) {
    for (auto& d : devices)
        if (name && d.name == name) return &d;
    return nullptr;
}

VerbsResult enrich(std::vector<RdmaDevice>& devices, bool port_state_carried) {
    VerbsResult r;
    if (devices.empty()) return r;

    int num = 0;
    errno = 0;
    std::unique_ptr<ibv_device*, DeviceListFree> list(ibv_get_device_list(&num));
    if (!list) {
        // ENOSYS: no kernel RDMA support (no uverbs class) - a host without RDMA, not a fault.
        const int err = errno;
        if (err != ENOSYS && err != 0) note(r, "ibv_get_device_list", err);
        return r;
    }

    for (int i = 0; i < num; ++i) {
        ibv_device* vdev = list.get()[i];
        RdmaDevice* dev = find_by_name(devices, ibv_get_device_name(vdev));
        if (!dev) continue;

        errno = 0;
        std::unique_ptr<ibv_context, ContextClose> ctx(ibv_open_device(vdev));
        if (!ctx) {
            note(r, "ibv_open_device(" + dev->name + ")", errno ? errno : EIO);
            continue;
        }
        r.available = true;

        for (auto& port : dev->ports) {
            const std::string what = "ibv_query_port(" + dev->name + "/" + std::to_string(port.port) + ")";
            if (port.port == 0 || port.port > UINT8_MAX) {
                note(r, what, EINVAL);
                continue;
            }
            ibv_port_attr attr;
            std::memset(&attr, 0, sizeof attr);
            errno = 0;
            const int rc = ibv_query_port(ctx.get(), static_cast<uint8_t>(port.port), &attr);
            if (rc != 0) {
                note(r, what, query_errno(rc));
                continue;
            }
            port.active_mtu = ibv_mtu_to_bytes(attr.active_mtu);
            port.max_mtu = ibv_mtu_to_bytes(attr.max_mtu);
            port.active_speed = attr.active_speed;
            port.active_width = attr.active_width;
            if (port_state_carried && apply_verbs_port_state(port, attr.state, attr.phys_state)) ++r.port_state_moved;
        }
    }
    return r;
}

}  // namespace

VerbsResult enrich_with_verbs(std::vector<RdmaDevice>& devices, bool port_state_carried) noexcept {
    try {
        return enrich(devices, port_state_carried);
    } catch (const std::exception& e) {
        return VerbsResult{.available = false, .errors = 1, .last_error = std::string("verbs: ") + e.what()};
    } catch (...) {
        return VerbsResult{.available = false, .errors = 1, .last_error = "verbs: unknown exception"};
    }
}

VerbsGidTables::VerbsGidTables(std::shared_ptr<ReadProgress> progress, std::string stage)
    : progress_(std::move(progress)), stage_(std::move(stage)) {}

VerbsGidTables::~VerbsGidTables() {
    if (list_) ibv_free_device_list(list_);
}

std::optional<GidTableSource::Table> VerbsGidTables::read(const std::string& device) {
    if (progress_) progress_->enter(stage_);
    if (!listed_) {
        listed_ = true;
        list_ = ibv_get_device_list(&count_);
    }
    if (!list_) return std::nullopt;
    ibv_device* vdev = nullptr;
    for (int i = 0; i < count_ && !vdev; ++i)
        if (device == ibv_get_device_name(list_[i])) vdev = list_[i];
    if (!vdev) return std::nullopt;

    std::unique_ptr<ibv_context, ContextClose> ctx(ibv_open_device(vdev));
    if (!ctx) return std::nullopt;
    // 32 KiB, for this one call: the tables are read every few minutes, not every cycle.
    std::vector<ibv_gid_entry> entries(kMaxEntries);
    const ssize_t n = ibv_query_gid_table(ctx.get(), entries.data(), entries.size(), 0);
    if (n < 0 || static_cast<std::size_t>(n) > entries.size()) return std::nullopt;

    Table table;
    table.reserve(static_cast<std::size_t>(n));
    for (const auto& v : std::span(entries).first(static_cast<std::size_t>(n))) {
        GidEntry e;
        e.index = static_cast<int>(v.gid_index);
        e.gid = gid_text(v.gid.raw);
        e.type = gid_type_text(static_cast<int>(v.gid_type));
        table.emplace_back(v.port_num, std::move(e));
    }
    return table;
}

std::string gid_text(const uint8_t (&raw)[16]) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string text;
    text.reserve(39);
    for (std::size_t i = 0; i < 16; ++i) {
        if (i > 0 && i % 2 == 0) text += ':';
        text += kHex[raw[i] >> 4];
        text += kHex[raw[i] & 0xf];
    }
    return text;
}

std::string gid_type_text(int ibv_gid_type) {
    switch (ibv_gid_type) {
        case IBV_GID_TYPE_IB:
        case IBV_GID_TYPE_ROCE_V1: return "IB/RoCE v1";
        case IBV_GID_TYPE_ROCE_V2: return "RoCE v2";
        default: return {};
    }
}

bool apply_verbs_port_state(RdmaPort& port, int state, int phys_state) {
    // The kernel's names, as its sysfs state and phys_state files print them.
    static constexpr const char* kStates[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};
    static constexpr const char* kPhysStates[] = {
        "<unknown>",         "Sleep",   "Polling", "Disabled", "PortConfigurationTraining", "LinkUp",
        "LinkErrorRecovery", "Phy Test"};
    const auto name = [](const auto& names, int v) -> std::string {
        return v >= 0 && static_cast<size_t>(v) < std::size(names) ? names[v] : "<unknown>";
    };
    const bool moved = port.state != state || port.phys_state != phys_state;
    if (port.state != state) {
        port.state = state;
        port.state_name = name(kStates, state);
    }
    if (port.phys_state != phys_state) {
        port.phys_state = phys_state;
        port.phys_state_name = name(kPhysStates, phys_state);
    }
    return moved;
}

std::optional<int> ibv_mtu_to_bytes(int ibv_mtu) {
    switch (ibv_mtu) {
        case IBV_MTU_256: return 256;
        case IBV_MTU_512: return 512;
        case IBV_MTU_1024: return 1024;
        case IBV_MTU_2048: return 2048;
        case IBV_MTU_4096: return 4096;
        default: return std::nullopt;
    }
}

std::string verbs_error_text(int err) {
    const char* meaning = nullptr;
    switch (err) {
        case EPERM:
        case EACCES: meaning = "no access to /dev/infiniband/uverbs* (run as root or grant the rdma group)"; break;
        case ENODEV:
        case ENXIO: meaning = "the device went away"; break;
        case ENOSYS: meaning = "no kernel RDMA support (ib_uverbs not loaded)"; break;
        case EOPNOTSUPP: meaning = "the provider does not support this query"; break;
        case ENOMEM: meaning = "out of memory"; break;
        case EINVAL: meaning = "invalid port or argument"; break;
        case EMFILE:
        case ENFILE: meaning = "out of file descriptors"; break;
        default: break;
    }
    const std::string sys = std::generic_category().message(err);
    return meaning ? std::string(meaning) + " (" + sys + ")" : sys + " (errno " + std::to_string(err) + ")";
}

}  // namespace rocewatch
