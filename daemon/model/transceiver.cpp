// SFF-8472, SFF-8636 and CMIS memory maps: which pages hold what, in which units.
#include "daemon/model/transceiver.hpp"

#include <algorithm>
#include <cerrno>

namespace rocewatch {

namespace {

enum class Spec { none, sff8472, sff8636, cmis };

Spec spec_of(uint8_t id) {
    switch (id) {
        case 0x03: return Spec::sff8472;  // SFP/SFP+/SFP28
        case 0x0c:                        // QSFP
        case 0x0d:                        // QSFP+
        case 0x11: return Spec::sff8636;  // QSFP28
        case 0x18:                        // QSFP-DD
        case 0x19:                        // OSFP
        case 0x1e:                        // QSFP+ with CMIS
        case 0x1f:                        // SFP-DD
        case 0x20: return Spec::cmis;     // SFP+ with CMIS
        default: return Spec::none;
    }
}

// A page as read, or nullptr when it is missing or short.
const std::vector<uint8_t>* page_of(const EepromPages& pages, EepromPage at) {
    auto it = pages.find(at);
    return it != pages.end() && it->second.size() >= 128 ? &it->second : nullptr;
}

// Byte `addr` of the 256-byte view made of a lower page and an upper page (addr >= 128).
struct View {
    const std::vector<uint8_t>* lower = nullptr;
    const std::vector<uint8_t>* upper = nullptr;
    std::optional<uint16_t> u16(unsigned addr) const {
        const auto* p = addr < 128 ? lower : upper;
        const unsigned at = addr < 128 ? addr : addr - 128;
        if (!p || at + 1 >= 128) return std::nullopt;
        return static_cast<uint16_t>((*p)[at] << 8 | (*p)[at + 1]);
    }
    std::optional<uint8_t> u8(unsigned addr) const {
        const auto* p = addr < 128 ? lower : upper;
        const unsigned at = addr < 128 ? addr : addr - 128;
        if (!p || at >= 128) return std::nullopt;
        return (*p)[at];
    }
    std::string text(unsigned first, unsigned last) const {
        std::string s;
        for (unsigned a = first; a <= last; ++a) {
            const auto c = u8(a);
            if (!c) return "";
            s.push_back(*c >= 0x20 && *c < 0x7f ? static_cast<char>(*c) : '?');
        }
        while (!s.empty() && (s.back() == ' ' || s.back() == '?')) s.pop_back();
        return s;
    }
};

// The units of SFF-8472 and SFF-8636 and CMIS alike.
std::optional<double> temperature(const View& v, unsigned addr) {
    const auto r = v.u16(addr);
    if (!r) return std::nullopt;
    return static_cast<int16_t>(*r) / 256.0;  // 1/256 degree C, two's complement
}
std::optional<double> voltage(const View& v, unsigned addr) {
    const auto r = v.u16(addr);
    return r ? std::optional<double>(*r * 100e-6) : std::nullopt;  // 100 uV
}
std::optional<double> power_mw(const View& v, unsigned addr) {
    const auto r = v.u16(addr);
    return r ? std::optional<double>(*r * 1e-4) : std::nullopt;  // 0.1 uW
}
std::optional<double> bias_ma(const View& v, unsigned addr, double multiplier) {
    const auto r = v.u16(addr);
    return r ? std::optional<double>(*r * 0.002 * multiplier) : std::nullopt;  // 2 uA
}

// Four consecutive levels in the order every spec stores them: high alarm, low alarm, high
// warning, low warning.
template <class Read>
ModuleThresholds thresholds(Read read, unsigned addr) {
    return {read(addr), read(addr + 2), read(addr + 4), read(addr + 6)};
}

void decode_sff8472(const EepromPages& pages, Transceiver& t) {
    const View id{page_of(pages, {0x50, 0, 0, 0}), nullptr};
    t.vendor = id.text(20, 35);
    t.part_number = id.text(40, 55);
    t.serial = id.text(68, 83);
    t.media_lanes = 1;
    // Byte 12 in 100 MBd; 0xff: byte 66 in 250 MBd (SFP28 and faster).
    if (const auto br = id.u8(12); br && *br == 0xff) {
        if (const auto ext = id.u8(66); ext && *ext != 0) t.nominal_lane_gbps = *ext * 0.25;
    } else if (br && *br != 0) {
        t.nominal_lane_gbps = *br * 0.1;
    }
    const uint8_t diag = id.u8(92).value_or(0);
    // Bit 6: digital diagnostics implemented; bit 4: externally calibrated (values need the
    // module's calibration constants, which modules of the last decade no longer use: not
    // decoded, rather than decoded wrong).
    t.diagnostics = (diag & 0x40) && !(diag & 0x10);
    t.rx_power_oma = !(diag & 0x08);
    const View a2{page_of(pages, {0x51, 0, 0, 0}), nullptr};
    if (!t.diagnostics || !a2.lower) return;
    const auto pw = [&](unsigned a) { return power_mw(a2, a); };
    const auto bias = [&](unsigned a) { return bias_ma(a2, a, 1.0); };
    t.temperature_thresholds = thresholds([&](unsigned a) { return temperature(a2, a); }, 0);
    t.voltage_thresholds = thresholds([&](unsigned a) { return voltage(a2, a); }, 8);
    t.tx_bias_thresholds = thresholds(bias, 16);
    t.tx_power_thresholds = thresholds(pw, 24);
    t.rx_power_thresholds = thresholds(pw, 32);
    t.temperature_c = temperature(a2, 96);
    t.voltage_v = voltage(a2, 98);
    t.lanes = {ModuleLane{.rx_power_mw = pw(104), .tx_power_mw = pw(102), .tx_bias_ma = bias(100)}};
}

void decode_sff8636(const EepromPages& pages, Transceiver& t) {
    const auto* lower = page_of(pages, {0x50, 0, 0, 0});
    const View v{lower, page_of(pages, {0x50, 0, 0, 128})};
    t.vendor = v.text(148, 163);
    t.part_number = v.text(168, 183);
    t.serial = v.text(196, 211);
    t.media_lanes = 4;
    if (const auto br = v.u8(140)) {
        if (*br == 0xff) {
            if (const auto ext = v.u8(222); ext && *ext != 0) t.nominal_lane_gbps = *ext * 0.25;
        } else if (*br != 0) {
            t.nominal_lane_gbps = *br * 0.1;
        }
    }
    // Byte 147, transmitter technology 0xa0 and up: copper, which has no optical monitors.
    const auto tech = v.u8(147);
    const uint8_t diag = v.u8(220).value_or(0);
    t.diagnostics = v.upper && tech && *tech < 0xa0;
    t.rx_power_oma = !(diag & 0x08);
    // Byte 220 bits 5 and 4 say temperature and supply monitors exist, but only since
    // revision 2.8; optical modules have had both from the start (SFF-8436).
    if ((diag & 0x20) || t.diagnostics) t.temperature_c = temperature(v, 22);
    if ((diag & 0x10) || t.diagnostics) t.voltage_v = voltage(v, 26);
    if (!t.diagnostics) return;
    for (unsigned lane = 0; lane < 4; ++lane)
        t.lanes.push_back({.rx_power_mw = power_mw(v, 34 + 2 * lane),
                           .tx_power_mw = (diag & 0x04) ? power_mw(v, 50 + 2 * lane) : std::nullopt,
                           .tx_bias_ma = bias_ma(v, 42 + 2 * lane, 1.0)});
    const View p3{lower, page_of(pages, {0x50, 3, 0, 128})};
    if (!p3.upper) return;
    const auto pw = [&](unsigned a) { return power_mw(p3, a); };
    t.temperature_thresholds = thresholds([&](unsigned a) { return temperature(p3, a); }, 128);
    t.voltage_thresholds = thresholds([&](unsigned a) { return voltage(p3, a); }, 144);
    t.rx_power_thresholds = thresholds(pw, 176);
    t.tx_bias_thresholds = thresholds([&](unsigned a) { return bias_ma(p3, a, 1.0); }, 184);
    t.tx_power_thresholds = thresholds(pw, 192);
}

// SFF-8024 Table 4-5, the Ethernet host electrical interfaces a CMIS application names: code,
// name, Gb/s. Codes not here (InfiniBand, Fibre Channel, SONET, vendor codes) give no rate.
struct HostInterface {
    uint8_t code;
    const char* name;
    double gbps;
};
constexpr HostInterface kHostInterfaces[] = {
    {0x05, "25GAUI C2M", 25},       {0x06, "XLAUI C2M", 40},        {0x07, "XLPPI", 40},
    {0x08, "LAUI-2 C2M", 50},       {0x09, "50GAUI-2 C2M", 50},     {0x0a, "50GAUI-1 C2M", 50},
    {0x0b, "CAUI-4 C2M", 100},      {0x41, "CAUI-4 C2M", 100},      {0x42, "CAUI-4 C2M", 100},
    {0x0c, "100GAUI-4 C2M", 100},   {0x0d, "100GAUI-2 C2M", 100},   {0x4b, "100GAUI-1-S C2M", 100},
    {0x4c, "100GAUI-1-L C2M", 100}, {0x0e, "200GAUI-8 C2M", 200},   {0x0f, "200GAUI-4 C2M", 200},
    {0x4d, "200GAUI-2-S C2M", 200}, {0x4e, "200GAUI-2-L C2M", 200}, {0x80, "200GAUI-1 C2M", 200},
    {0x10, "400GAUI-16 C2M", 400},  {0x11, "400GAUI-8 C2M", 400},   {0x4f, "400GAUI-4-S C2M", 400},
    {0x50, "400GAUI-4-L C2M", 400}, {0x81, "400GAUI-2 C2M", 400},   {0x51, "800GAUI-8-S C2M", 800},
    {0x52, "800GAUI-8-L C2M", 800}, {0x82, "800GAUI-4 C2M", 800},   {0x14, "25GBASE-CR", 25},
    {0x15, "25GBASE-CR", 25},       {0x16, "25GBASE-CR", 25},       {0x17, "40GBASE-CR4", 40},
    {0x18, "50GBASE-CR", 50},       {0x43, "50GBASE-CR2", 50},      {0x44, "50GBASE-CR2", 50},
    {0x45, "50GBASE-CR2", 50},      {0x19, "100GBASE-CR10", 100},   {0x1a, "100GBASE-CR4", 100},
    {0x1b, "100GBASE-CR2", 100},    {0x1c, "200GBASE-CR4", 200},    {0x1d, "400G CR8", 400},
};

// CMIS lower page bytes 86-117: up to 8 application descriptors of 4 bytes (host interface,
// media interface, lane counts, host lane options); host interface 0xff ends the list.
void decode_applications(const View& v, Transceiver& t) {
    for (unsigned a = 86; a + 3 <= 117; a += 4) {
        const auto host = v.u8(a);
        if (!host || *host == 0xff) break;
        for (const auto& h : kHostInterfaces)
            if (h.code == *host && (!t.fastest_application_gbps || h.gbps > *t.fastest_application_gbps)) {
                t.fastest_application = h.name;
                t.fastest_application_gbps = h.gbps;
            }
    }
}

void decode_cmis(const EepromPages& pages, Transceiver& t) {
    const auto* lower = page_of(pages, {0x50, 0, 0, 0});
    const View v{lower, page_of(pages, {0x50, 0, 0, 128})};
    t.vendor = v.text(129, 144);
    t.part_number = v.text(148, 163);
    t.serial = v.text(166, 181);
    // The first application's media lane count (byte 88, low nibble).
    const uint8_t lanes = v.u8(88).value_or(0) & 0x0f;
    t.media_lanes = lanes ? lanes : 8;
    decode_applications(v, t);
    const bool flat = v.u8(2).value_or(0x80) & 0x80;  // flat memory: passive copper, no pages
    t.diagnostics = !flat;
    if (flat) return;
    const View p1{lower, page_of(pages, {0x50, 1, 0, 128})};
    // Page 1 byte 159: the module-level monitors that exist (bit 0 temperature, bit 1 supply).
    const uint8_t module_mon = p1.u8(159).value_or(0);
    if (module_mon & 0x01) t.temperature_c = temperature(v, 14);
    if (module_mon & 0x02) t.voltage_v = voltage(v, 16);
    const View p2{lower, page_of(pages, {0x50, 2, 0, 128})};
    const View p11{lower, page_of(pages, {0x50, 0x11, 0, 128})};
    // Page 1 byte 160: which lane monitors exist and the bias current's multiplier.
    const uint8_t mon = p1.u8(160).value_or(0);
    const double mult = (mon & 0x18) == 0x08 ? 2.0 : (mon & 0x18) == 0x10 ? 4.0 : 1.0;
    t.rx_power_oma = p1.upper && !(p1.u8(151).value_or(0) & 0x10);
    if (p11.upper && p1.upper)
        for (unsigned lane = 0; lane < std::min<unsigned>(t.media_lanes.value_or(8), 8); ++lane)
            t.lanes.push_back({.rx_power_mw = (mon & 0x04) ? power_mw(p11, 186 + 2 * lane) : std::nullopt,
                               .tx_power_mw = (mon & 0x02) ? power_mw(p11, 154 + 2 * lane) : std::nullopt,
                               .tx_bias_ma = (mon & 0x01) ? bias_ma(p11, 170 + 2 * lane, mult) : std::nullopt});
    if (!p2.upper) return;
    const auto pw = [&](unsigned a) { return power_mw(p2, a); };
    t.temperature_thresholds = thresholds([&](unsigned a) { return temperature(p2, a); }, 128);
    t.voltage_thresholds = thresholds([&](unsigned a) { return voltage(p2, a); }, 136);
    t.tx_power_thresholds = thresholds(pw, 176);
    t.tx_bias_thresholds = thresholds([&](unsigned a) { return bias_ma(p2, a, mult); }, 184);
    t.rx_power_thresholds = thresholds(pw, 192);
}

}  // namespace

std::string module_type_name(uint8_t identifier) {
    switch (identifier) {
        case 0x03: return "SFP";
        case 0x0c: return "QSFP";
        case 0x0d: return "QSFP+";
        case 0x11: return "QSFP28";
        case 0x18: return "QSFP-DD";
        case 0x19: return "OSFP";
        case 0x1e: return "QSFP+ (CMIS)";
        case 0x1f: return "SFP-DD";
        case 0x20: return "SFP+ (CMIS)";
        default: return "";
    }
}

std::vector<EepromPage> module_pages_to_read(const std::vector<uint8_t>& lower_page) {
    if (lower_page.size() < 128) return {};
    switch (spec_of(lower_page[0])) {
        case Spec::sff8472:
            // A2h holds the diagnostics, where byte 92 says they are implemented.
            if (lower_page[92] & 0x40) return {{0x51, 0, 0, 0}};
            return {};
        case Spec::sff8636:
            // Byte 2 bit 2: flat memory (upper page 0 only, no thresholds page 3).
            if (lower_page[2] & 0x04) return {{0x50, 0, 0, 128}};
            return {{0x50, 0, 0, 128}, {0x50, 3, 0, 128}};
        case Spec::cmis:
            if (lower_page[2] & 0x80) return {{0x50, 0, 0, 128}};
            return {{0x50, 0, 0, 128}, {0x50, 1, 0, 128}, {0x50, 2, 0, 128}, {0x50, 0x11, 0, 128}};
        case Spec::none: return {};
    }
    return {};
}

Transceiver decode_module(const EepromPages& pages) {
    Transceiver t;
    const auto* lower = page_of(pages, {0x50, 0, 0, 0});
    if (!lower) {
        t.error = EINVAL;
        return t;
    }
    t.identifier = (*lower)[0];
    t.type = module_type_name(t.identifier);
    switch (spec_of(t.identifier)) {
        case Spec::sff8472:
            t.spec = "SFF-8472";
            decode_sff8472(pages, t);
            break;
        case Spec::sff8636:
            t.spec = "SFF-8636";
            decode_sff8636(pages, t);
            break;
        case Spec::cmis:
            t.spec = "CMIS";
            decode_cmis(pages, t);
            break;
        case Spec::none: break;
    }
    return t;
}

}  // namespace rocewatch
