// DCB (IEEE 802.1Qaz) state of a netdev as its driver reports it over dcbnl: PFC, ETS, APP.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rocewatch {

// One APP table entry: traffic selected by (selector, protocol) goes out at `priority`.
struct DcbApp {
    uint8_t selector = 0;   // IEEE_8021QAZ_APP_SEL_*: 1 ethertype, 2 TCP/SCTP port, 3 UDP/DCCP port, 4 any port, 5 DSCP
    uint16_t protocol = 0;  // the ethertype, port or DSCP value
    uint8_t priority = 0;
    bool operator==(const DcbApp&) const = default;
};

// What DCB_CMD_IEEE_GET answers for one netdev. Each table is set only where the driver
// reported it (a driver may implement PFC and not ETS, or neither).
struct DcbIeee {
    std::optional<uint8_t> pfc_enabled;              // bit p set: PFC on for priority p
    std::optional<uint8_t> pfc_cap;                  // priorities the port can pause at once
    std::optional<std::array<uint8_t, 8>> prio_tc;   // ETS: priority -> traffic class
    std::optional<std::array<uint8_t, 8>> tc_tsa;    // ETS: per traffic class, IEEE_8021QAZ_TSA_*
    std::optional<std::array<uint8_t, 8>> tc_tx_bw;  // ETS: per traffic class, percent
    std::vector<DcbApp> apps;
    std::optional<uint8_t> dcbx;  // DCB_CAP_DCBX_* bits (host/LLD managed, IEEE/CEE)
    bool operator==(const DcbIeee&) const = default;
};

// The answer for one netdev: the tables, or the kernel's errno (EOPNOTSUPP: the driver has
// no DCB support, as veth, virtio_net and rxe's parents in the test bed).
struct DcbState {
    int error = 0;
    DcbIeee ieee;  // when error == 0
    bool operator==(const DcbState&) const = default;
};

// The priorities whose bit is set in a per-priority bitmap (PFC, ECN), ascending.
[[nodiscard]] std::vector<int> priorities_in(uint8_t bits);
// The priorities with PFC on, ascending (empty when PFC is off, or not reported).
[[nodiscard]] std::vector<int> pfc_priorities(const DcbIeee& d);
// Whether PFC is on for `priority`.
[[nodiscard]] inline bool pfc_on(const DcbIeee& d, int priority) {
    return d.pfc_enabled && ((*d.pfc_enabled >> priority) & 1u) != 0;
}

// Which 802.1p priority RoCE v2 packets sent with IP ToS `tos` (rdma_cm's default_roce_tos,
// 0 unless set) leave at, by what the APP table says: the DSCP entry for tos >> 2 when the
// table maps DSCPs (trust DSCP, the mlx5 way), else the UDP port 4791 entry, else priority
// 0 (no entry: the default priority). `how` says which, in words for an alert.
struct RocePriority {
    int priority = 0;
    std::string how;
};
[[nodiscard]] RocePriority roce_priority(const DcbIeee& d, int tos);

}  // namespace rocewatch
