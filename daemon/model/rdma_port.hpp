// What kind of RDMA port a port is, and whether it is up: the one definition that the
// rules, the metrics and the REST view share.
#pragma once

#include <optional>
#include <string>

#include "daemon/model/snapshot.hpp"

namespace rocewatch {

// How the port moves RDMA traffic, from the device's node_type and the port's link_layer.
// The kernel reports link_layer "Ethernet" for RoCE, iWARP and usNIC alike: RoCE is an
// Ethernet port of a CA (node_type "1: CA").
enum class NicFamily {
    roce,        // link_layer Ethernet, node_type 1: CA (mlx5, rxe, bnxt_re, ...)
    infiniband,  // link_layer InfiniBand (mlx4/mlx5 in IB mode, hfi1 Omni-Path, qib)
    iwarp,       // node_type 4: RNIC (i40iw/irdma, cxgb4, siw): RDMA over TCP, no RoCE GIDs
    usnic,       // node_type 5: usNIC / 6: usNIC UDP (Cisco)
};

[[nodiscard]] const char* to_string(NicFamily f);

// node_type's number: "4: RNIC" -> 4; unset when empty or not "<n>: <name>".
[[nodiscard]] std::optional<int> node_type_number(const std::string& node_type);

// A port whose link_layer is not InfiniBand and whose node_type is missing or unknown is
// taken as RoCE, as before node_type was read.
[[nodiscard]] NicFamily nic_family(const RdmaDevice& d, const RdmaPort& p);

// Up: logical state ACTIVE (4) and physical state LinkUp (5). A half that could not be read
// is not held against the port; unset when neither could be read (unknown, not down).
[[nodiscard]] std::optional<bool> port_up(const RdmaPort& p);

// The kernel's names for phys_state (drivers/infiniband/core/sysfs.c, phys_state_to_str):
// 1 Sleep, 2 Polling, 3 Disabled, 4 PortConfigurationTraining, 5 LinkUp,
// 6 LinkErrorRecovery, 7 Phy Test; "" for other codes.
[[nodiscard]] const char* kernel_phys_state_name(int code);

// "state 4: ACTIVE" / "phys_state 3: Disabled": the code and its name (for phys_state the
// kernel's name of the code where it has one, else the name sysfs gave); "state ?" when
// unreadable.
[[nodiscard]] std::string state_words(const RdmaPort& p);
[[nodiscard]] std::string phys_state_words(const RdmaPort& p);

// The RoCE port bound to `netdev`; null when none.
[[nodiscard]] const RdmaPort* roce_port_for_netdev(const Snapshot& s, const std::string& netdev);

// The ToS rdma_cm gives RoCE connections over `netdev`: its RoCE port's configfs
// default_roce_tos, else 0 (rdma_cm's default).
[[nodiscard]] int rdma_cm_tos_for_netdev(const Snapshot& s, const std::string& netdev);

}  // namespace rocewatch
