// The transceiver module of a netdev (SFP, QSFP, QSFP-DD, OSFP) as its EEPROM describes it:
// identity, live diagnostics (temperature, supply voltage, per-lane rx/tx optical power and
// laser bias) and the warning/alarm thresholds the module itself stores. Decoded from the
// 128-byte pages of SFF-8472 (SFP), SFF-8636 (QSFP+/QSFP28) and CMIS (QSFP-DD, OSFP), which
// the kernel hands out through ethtool netlink's MODULE_EEPROM_GET. Pure: bytes in, values out.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace rocewatch {

// One 128-byte half page of a module's memory map: the lower page (offset 0) or an upper page
// (offset 128) at a two-wire address (0x50; 0x51 for SFP diagnostics), page and bank.
struct EepromPage {
    uint8_t i2c_address = 0x50;
    uint8_t page = 0;
    uint8_t bank = 0;
    uint8_t offset = 0;  // 0 or 128
    auto operator<=>(const EepromPage&) const = default;
};
using EepromPages = std::map<EepromPage, std::vector<uint8_t>>;

// Warning and alarm levels of one quantity, as the module stores them.
struct ModuleThresholds {
    std::optional<double> high_alarm, low_alarm, high_warning, low_warning;
    bool operator==(const ModuleThresholds&) const = default;
};

struct ModuleLane {
    std::optional<double> rx_power_mw;  // average or OMA: see Transceiver::rx_power_oma
    std::optional<double> tx_power_mw;
    std::optional<double> tx_bias_ma;
    bool operator==(const ModuleLane&) const = default;
};

struct Transceiver {
    // The kernel's errno for the first page (ENODEV/EIO: no module plugged or it does not
    // answer; EOPNOTSUPP: the driver cannot read modules); 0 when read.
    int error = 0;
    std::string spec;        // "SFF-8472", "SFF-8636", "CMIS"; "" when the identifier is unknown
    uint8_t identifier = 0;  // SFF-8024 byte 0
    std::string type;        // "SFP", "QSFP+", "QSFP28", "QSFP-DD", "OSFP"...
    std::string vendor, part_number, serial;
    // False for passive copper (DAC) and modules without digital diagnostics: no monitors.
    bool diagnostics = false;
    bool rx_power_oma = false;  // rx power is OMA rather than average power
    std::optional<double> temperature_c;
    std::optional<double> voltage_v;
    std::vector<ModuleLane> lanes;
    ModuleThresholds temperature_thresholds, voltage_thresholds, rx_power_thresholds, tx_power_thresholds,
        tx_bias_thresholds;
    // SFF-8636's nominal signalling rate per lane (bytes 140/222), in Gb/s; unset elsewhere.
    std::optional<double> nominal_lane_gbps;
    std::optional<uint32_t> media_lanes;  // lanes the module has (4 for QSFP, 8 for QSFP-DD...)
    // CMIS: the fastest application the module advertises (lower page bytes 86-117), by its
    // SFF-8024 host interface ("400GAUI-8 C2M") and that interface's Ethernet rate in Gb/s;
    // unset elsewhere, or where no advertised interface is one we know the rate of.
    std::string fastest_application;
    std::optional<double> fastest_application_gbps;
    bool operator==(const Transceiver&) const = default;
};

// SFF-8024 identifier name: 0x03 "SFP", 0x0d "QSFP+", 0x11 "QSFP28", 0x18 "QSFP-DD"...; "" when
// unknown.
[[nodiscard]] std::string module_type_name(uint8_t identifier);

// The pages to read after the lower page 0 (bytes 0-127 at 0x50), for what that page says the
// module is and how its memory is paged. Empty when the identifier is not one we decode.
[[nodiscard]] std::vector<EepromPage> module_pages_to_read(const std::vector<uint8_t>& lower_page);

// Everything the pages say; a page missing or short leaves its fields unset. `pages` must hold
// the lower page 0; otherwise the result is empty with error EINVAL.
[[nodiscard]] Transceiver decode_module(const EepromPages& pages);

}  // namespace rocewatch
