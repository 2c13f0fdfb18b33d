// Adds what only libibverbs knows (MTU, speed, width per port) to devices read from sysfs,
// and reads GID tables through it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/model/snapshot.hpp"
#include "daemon/sysfs/rdma_sysfs.hpp"

struct ibv_device;  // <infiniband/verbs.h>, for the one member that holds its list

namespace rocewatch {

struct VerbsResult {
    bool available = false;  // at least one of the devices was opened through verbs
    uint64_t errors = 0;     // failed opens and port queries
    std::string last_error;  // "" when none
    // Ports whose carried-over state the driver's answer contradicted (see enrich_with_verbs).
    uint64_t port_state_moved = 0;
};

// Queries every port of every device in `devices` that verbs also lists (matched by name)
// and fills active_mtu, max_mtu, active_speed, active_width. Devices verbs does not know are
// left untouched. A host without RDMA devices or verbs providers is normal: available=false,
// errors=0. Never throws.
// port_state_carried: the ports' state and physical state were carried over from an earlier
// read, not read now (SysfsReadOptions::port_state). The driver's answer, which is this
// cycle's, replaces them where it differs (apply_verbs_port_state), counted in
// port_state_moved: a change no netlink event told of is seen on this cycle all the same.
[[nodiscard]] VerbsResult enrich_with_verbs(std::vector<RdmaDevice>& devices, bool port_state_carried = false) noexcept;

// GID tables through libibverbs (ibv_query_gid_table: one ioctl a device), for
// SysfsReadOptions::gid_tables. Lists the devices on its first read and keeps the list until
// it is destroyed: make one for each read of the tables. Only for a read of the host's own
// /sys: it finds devices by name, and a fixture tree's must not take a real device's table.
// A device it cannot open or query (no access to uverbs, a kernel before 5.9, a table past
// kMaxEntries) gets nullopt, and the reader takes that table from sysfs.
class VerbsGidTables final : public GidTableSource {
public:
    // Before each device's open and query, `progress` (may be null) is told `stage`: a
    // wedged device blocks there, and the caller can name it and skip verbs next time.
    VerbsGidTables(std::shared_ptr<ReadProgress> progress, std::string stage);
    ~VerbsGidTables() override;
    VerbsGidTables(const VerbsGidTables&) = delete;
    VerbsGidTables& operator=(const VerbsGidTables&) = delete;

    [[nodiscard]] std::optional<Table> read(const std::string& device) override;

    // The kernel takes the entries' buffer length as 16 bits: 2,048 entries of 32 bytes or
    // more is refused (EINVAL). Real tables hold a few entries a port.
    static constexpr std::size_t kMaxEntries = 1024;

private:
    std::shared_ptr<ReadProgress> progress_;
    std::string stage_;
    bool listed_ = false;
    int count_ = 0;
    ::ibv_device** list_ = nullptr;
};

// Pure. A GID as sysfs prints it (the kernel's %pI6: eight groups of four lowercase hex
// digits), from its 16 bytes in network order.
[[nodiscard]] std::string gid_text(const uint8_t (&raw)[16]);

// Pure. The text gid_attrs/types gives for libibverbs' GID type: "RoCE v2" for
// IBV_GID_TYPE_ROCE_V2, "IB/RoCE v1" for IB and RoCE v1, "" for anything else.
[[nodiscard]] std::string gid_type_text(int ibv_gid_type);

// Pure. Sets the port's state and physical state to the driver's (ibv_port_attr's state and
// phys_state, with the names sysfs gives them: "ACTIVE", "LinkUp"), returning whether either
// differed from what the port held.
bool apply_verbs_port_state(RdmaPort& port, int state, int phys_state);

// IBV_MTU_256 (1) .. IBV_MTU_4096 (5) -> 256 .. 4096 bytes; unset for anything else.
[[nodiscard]] std::optional<int> ibv_mtu_to_bytes(int ibv_mtu);

// The one place verbs errno values become text: "<what it means> (<strerror>)".
[[nodiscard]] std::string verbs_error_text(int err);

}  // namespace rocewatch
