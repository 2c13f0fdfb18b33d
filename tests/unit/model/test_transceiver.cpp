// Transceiver EEPROM decoding on byte images laid out by SFF-8472, SFF-8636 and CMIS. No module
// is in reach of this machine or its VM (netdevsim has no module EEPROM), so the images are
// built here field by field from the specs, each value in the unit the spec gives, and the
// decoded figures are checked against the same numbers worked out by hand.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "daemon/model/transceiver.hpp"

using namespace rocewatch;

namespace {

// A 128-byte half page addressed as the spec does: 0-127 lower, 128-255 upper.
struct Half {
    std::vector<uint8_t> bytes = std::vector<uint8_t>(128, 0);
    unsigned base = 0;
    explicit Half(unsigned base_) : base(base_) {}
    Half& u8(unsigned addr, uint8_t v) {
        bytes.at(addr - base) = v;
        return *this;
    }
    Half& u16(unsigned addr, uint16_t v) {
        bytes.at(addr - base) = static_cast<uint8_t>(v >> 8);
        bytes.at(addr - base + 1) = static_cast<uint8_t>(v);
        return *this;
    }
    Half& text(unsigned addr, unsigned len, const std::string& s) {
        for (unsigned i = 0; i < len; ++i) bytes.at(addr - base + i) = i < s.size() ? s[i] : ' ';
        return *this;
    }
};

// The units: 1/256 degree C, 100 uV, 0.1 uW, 2 uA.
uint16_t celsius(double c) { return static_cast<uint16_t>(static_cast<int16_t>(c * 256)); }
uint16_t volts(double v) { return static_cast<uint16_t>(v * 10000 + 0.5); }
uint16_t milliwatts(double mw) { return static_cast<uint16_t>(mw * 10000 + 0.5); }
uint16_t milliamps(double ma, double mult = 1) { return static_cast<uint16_t>(ma / 0.002 / mult + 0.5); }

// Four levels in spec order: high alarm, low alarm, high warning, low warning.
void levels(Half& h, unsigned addr, uint16_t ha, uint16_t la, uint16_t hw, uint16_t lw) {
    h.u16(addr, ha).u16(addr + 2, la).u16(addr + 4, hw).u16(addr + 6, lw);
}

void expect_levels(const ModuleThresholds& t, double ha, double la, double hw, double lw, double tol) {
    ASSERT_TRUE(t.high_alarm && t.low_alarm && t.high_warning && t.low_warning);
    EXPECT_NEAR(*t.high_alarm, ha, tol);
    EXPECT_NEAR(*t.low_alarm, la, tol);
    EXPECT_NEAR(*t.high_warning, hw, tol);
    EXPECT_NEAR(*t.low_warning, lw, tol);
}

constexpr EepromPage kLower{0x50, 0, 0, 0};
constexpr EepromPage kUpper0{0x50, 0, 0, 128};

// A QSFP28 100GBASE-SR4 optic, paged memory: lower page, upper page 0, page 3 thresholds.
EepromPages qsfp28_sr4() {
    Half lower(0), upper(128), p3(128);
    lower.u8(0, 0x11).u8(1, 0x08).u8(2, 0x00);  // QSFP28, rev 2.8+, paged
    lower.u16(22, celsius(35.5)).u16(26, volts(3.3));
    const double rx[4] = {0.8, 0.5, 0.02, 0.9};
    for (unsigned l = 0; l < 4; ++l) {
        lower.u16(34 + 2 * l, milliwatts(rx[l]));
        lower.u16(42 + 2 * l, milliamps(7.5));
        lower.u16(50 + 2 * l, milliwatts(0.7));
    }
    upper.u8(128, 0x11).u8(140, 0xff).u8(222, 103).u8(147, 0x00);  // 25.75 Gb/s lanes, 850 nm VCSEL
    upper.text(148, 16, "NVIDIA").text(168, 16, "MMA1B00-C100D").text(196, 16, "MT2233FT01234");
    upper.u8(220, 0x3c);  // temperature and supply monitors, average rx power, tx power
    levels(p3, 128, celsius(75), celsius(-5), celsius(70), celsius(0));
    levels(p3, 144, volts(3.63), volts(2.97), volts(3.465), volts(3.135));
    levels(p3, 176, milliwatts(3.4674), milliwatts(0.0363), milliwatts(2.1878), milliwatts(0.0724));
    levels(p3, 184, milliamps(13), milliamps(3), milliamps(12), milliamps(4));
    levels(p3, 192, milliwatts(3.1623), milliwatts(0.0813), milliwatts(2.5119), milliwatts(0.1259));
    return {{kLower, lower.bytes}, {kUpper0, upper.bytes}, {{0x50, 3, 0, 128}, p3.bytes}};
}

}  // namespace

TEST(Transceiver, Qsfp28OpticDecodesEveryMonitorAndThreshold) {
    const auto pages = qsfp28_sr4();
    const auto want = std::vector<EepromPage>{kUpper0, {0x50, 3, 0, 128}};
    EXPECT_EQ(module_pages_to_read(pages.at(kLower)), want);
    const Transceiver t = decode_module(pages);
    EXPECT_EQ(t.error, 0);
    EXPECT_EQ(t.spec, "SFF-8636");
    EXPECT_EQ(t.type, "QSFP28");
    EXPECT_EQ(t.vendor, "NVIDIA");
    EXPECT_EQ(t.part_number, "MMA1B00-C100D");
    EXPECT_EQ(t.serial, "MT2233FT01234");
    EXPECT_TRUE(t.diagnostics);
    EXPECT_FALSE(t.rx_power_oma);
    ASSERT_TRUE(t.nominal_lane_gbps);
    EXPECT_DOUBLE_EQ(*t.nominal_lane_gbps, 25.75);
    EXPECT_EQ(t.media_lanes, 4u);
    EXPECT_DOUBLE_EQ(t.temperature_c.value(), 35.5);
    EXPECT_NEAR(t.voltage_v.value(), 3.3, 1e-4);
    ASSERT_EQ(t.lanes.size(), 4u);
    EXPECT_NEAR(t.lanes[0].rx_power_mw.value(), 0.8, 1e-4);
    EXPECT_NEAR(t.lanes[2].rx_power_mw.value(), 0.02, 1e-4);
    EXPECT_NEAR(t.lanes[3].tx_power_mw.value(), 0.7, 1e-4);
    EXPECT_NEAR(t.lanes[1].tx_bias_ma.value(), 7.5, 0.002);
    expect_levels(t.temperature_thresholds, 75, -5, 70, 0, 1e-9);
    expect_levels(t.voltage_thresholds, 3.63, 2.97, 3.465, 3.135, 1e-4);
    expect_levels(t.rx_power_thresholds, 3.4674, 0.0363, 2.1878, 0.0724, 1e-4);
    expect_levels(t.tx_bias_thresholds, 13, 3, 12, 4, 0.002);
    expect_levels(t.tx_power_thresholds, 3.1623, 0.0813, 2.5119, 0.1259, 1e-4);
}

TEST(Transceiver, NegativeTemperaturesAreTwosComplement) {
    auto pages = qsfp28_sr4();
    Half lower(0);
    lower.bytes = pages.at(kLower);
    lower.u16(22, celsius(-12.25));
    pages[kLower] = lower.bytes;
    EXPECT_DOUBLE_EQ(decode_module(pages).temperature_c.value(), -12.25);
}

TEST(Transceiver, PassiveCopperQsfpHasNoOpticalMonitors) {
    Half lower(0), upper(128);
    lower.u8(0, 0x11).u8(2, 0x04);  // flat memory: no page 3
    upper.u8(147, 0xa0).u8(220, 0x00).text(148, 16, "Mellanox").text(168, 16, "MCP1600-C003");
    EXPECT_EQ(module_pages_to_read(lower.bytes), std::vector<EepromPage>{kUpper0});
    const Transceiver t = decode_module({{kLower, lower.bytes}, {kUpper0, upper.bytes}});
    EXPECT_EQ(t.part_number, "MCP1600-C003");
    EXPECT_FALSE(t.diagnostics);
    EXPECT_TRUE(t.lanes.empty());
    EXPECT_FALSE(t.temperature_c);
    EXPECT_FALSE(t.rx_power_thresholds.low_warning);
}

TEST(Transceiver, SfpDiagnosticsComeFromA2) {
    Half a0(0), a2(0);
    a0.u8(0, 0x03).u8(12, 0xff).u8(92, 0x68);  // DDM, internally calibrated, average power
    a0.text(20, 16, "FINISAR CORP.").text(40, 16, "FTLF8536P4BCL").text(68, 16, "X9Y8Z7");
    levels(a2, 0, celsius(78), celsius(-13), celsius(75), celsius(-8));
    levels(a2, 8, volts(3.7), volts(2.9), volts(3.6), volts(3.0));
    levels(a2, 16, milliamps(12), milliamps(2), milliamps(11.5), milliamps(3));
    levels(a2, 24, milliwatts(1.7783), milliwatts(0.1), milliwatts(1.4125), milliwatts(0.1585));
    levels(a2, 32, milliwatts(1.7783), milliwatts(0.0251), milliwatts(1.4125), milliwatts(0.0398));
    a2.u16(96, celsius(41.0)).u16(98, volts(3.31)).u16(100, milliamps(6.8)).u16(102, milliwatts(0.56));
    a2.u16(104, milliwatts(0.031));  // under the low warning, above the low alarm
    const EepromPage at_a2{0x51, 0, 0, 0};
    EXPECT_EQ(module_pages_to_read(a0.bytes), std::vector<EepromPage>{at_a2});
    const Transceiver t = decode_module({{kLower, a0.bytes}, {at_a2, a2.bytes}});
    EXPECT_EQ(t.spec, "SFF-8472");
    EXPECT_EQ(t.type, "SFP");
    EXPECT_EQ(t.vendor, "FINISAR CORP.");
    EXPECT_EQ(t.serial, "X9Y8Z7");
    EXPECT_FALSE(t.nominal_lane_gbps) << "0xff: the extended rate byte, which this image leaves 0";
    Half rated = a0;
    rated.u8(66, 103);  // 25.75 GBd: an SFP28
    EXPECT_DOUBLE_EQ(decode_module({{kLower, rated.bytes}}).nominal_lane_gbps.value(), 25.75);
    rated.u8(12, 0x67).u8(66, 0);  // 10.3 GBd in byte 12: an SFP+
    EXPECT_DOUBLE_EQ(decode_module({{kLower, rated.bytes}}).nominal_lane_gbps.value(), 10.3);
    ASSERT_EQ(t.lanes.size(), 1u);
    EXPECT_NEAR(t.lanes[0].rx_power_mw.value(), 0.031, 1e-4);
    EXPECT_NEAR(t.lanes[0].tx_bias_ma.value(), 6.8, 0.002);
    EXPECT_DOUBLE_EQ(t.temperature_c.value(), 41.0);
    expect_levels(t.rx_power_thresholds, 1.7783, 0.0251, 1.4125, 0.0398, 1e-4);
    expect_levels(t.tx_bias_thresholds, 12, 2, 11.5, 3, 0.002);

    // Externally calibrated modules need constants we do not apply: no figures rather than
    // wrong ones.
    a0.u8(92, 0x58);
    const Transceiver ext = decode_module({{kLower, a0.bytes}, {at_a2, a2.bytes}});
    EXPECT_FALSE(ext.diagnostics);
    EXPECT_TRUE(ext.lanes.empty());
    // Without DDM, A2h is not asked for.
    a0.u8(92, 0x00);
    EXPECT_TRUE(module_pages_to_read(a0.bytes).empty());
}

TEST(Transceiver, CmisModuleWithEightLanesAndABiasMultiplier) {
    Half lower(0), upper(128), p1(128), p2(128), p11(128);
    lower.u8(0, 0x19).u8(1, 0x50).u8(2, 0x00);  // OSFP, CMIS 5.0, paged
    lower.u16(14, celsius(48.25)).u16(16, volts(3.28));
    lower.u8(86, 0x50).u8(87, 0x0e).u8(88, 0x88);  // application 1: 400GAUI-4-L, 8 host and 8 media lanes
    lower.u8(90, 0x0d).u8(91, 0x0e).u8(92, 0x22);  // application 2: 100GAUI-2 C2M on 2 lanes
    lower.u8(94, 0xff);                            // the end of the list...
    lower.u8(98, 0x51);                            // ...so no 800G application after it counts
    upper.text(129, 16, "NVIDIA").text(148, 16, "MMA4Z00-NS").text(166, 16, "MT2401FT00042");
    p1.u8(151, 0x10).u8(159, 0x03).u8(160, 0x0f);  // average rx; temp+vcc; bias, tx, rx; bias x2
    for (unsigned l = 0; l < 8; ++l) {
        p11.u16(154 + 2 * l, milliwatts(1.2));
        p11.u16(170 + 2 * l, milliamps(8.0, 2));
        p11.u16(186 + 2 * l, milliwatts(l == 5 ? 0.05 : 1.1));
    }
    levels(p2, 128, celsius(80), celsius(-5), celsius(75), celsius(0));
    levels(p2, 136, volts(3.6), volts(3.0), volts(3.5), volts(3.1));
    levels(p2, 176, milliwatts(4.0), milliwatts(0.2), milliwatts(3.2), milliwatts(0.3));
    levels(p2, 184, milliamps(15, 2), milliamps(2, 2), milliamps(14, 2), milliamps(3, 2));
    levels(p2, 192, milliwatts(4.0), milliwatts(0.08), milliwatts(3.2), milliwatts(0.1));
    const std::vector<EepromPage> want{kUpper0, {0x50, 1, 0, 128}, {0x50, 2, 0, 128}, {0x50, 0x11, 0, 128}};
    EXPECT_EQ(module_pages_to_read(lower.bytes), want);
    const Transceiver t = decode_module({{kLower, lower.bytes},
                                         {kUpper0, upper.bytes},
                                         {want[1], p1.bytes},
                                         {want[2], p2.bytes},
                                         {want[3], p11.bytes}});
    EXPECT_EQ(t.spec, "CMIS");
    EXPECT_EQ(t.type, "OSFP");
    EXPECT_EQ(t.part_number, "MMA4Z00-NS");
    EXPECT_EQ(t.media_lanes, 8u);
    EXPECT_EQ(t.fastest_application, "400GAUI-4-L C2M");
    EXPECT_EQ(t.fastest_application_gbps, 400.0);
    EXPECT_DOUBLE_EQ(t.temperature_c.value(), 48.25);
    EXPECT_NEAR(t.voltage_v.value(), 3.28, 1e-4);
    ASSERT_EQ(t.lanes.size(), 8u);
    EXPECT_NEAR(t.lanes[5].rx_power_mw.value(), 0.05, 1e-4);
    EXPECT_NEAR(t.lanes[0].tx_power_mw.value(), 1.2, 1e-4);
    EXPECT_NEAR(t.lanes[7].tx_bias_ma.value(), 8.0, 0.004) << "raw counts times 2 uA times the multiplier 2";
    expect_levels(t.rx_power_thresholds, 4.0, 0.08, 3.2, 0.1, 1e-4);
    expect_levels(t.tx_bias_thresholds, 15, 2, 14, 3, 0.004);
    expect_levels(t.temperature_thresholds, 80, -5, 75, 0, 1e-9);

    // A page that did not come (the read failed) leaves its fields unset, nothing else.
    const Transceiver no_p2 = decode_module(
        {{kLower, lower.bytes}, {kUpper0, upper.bytes}, {want[1], p1.bytes}, {want[3], p11.bytes}});
    EXPECT_EQ(no_p2.lanes.size(), 8u);
    EXPECT_FALSE(no_p2.rx_power_thresholds.low_warning);
}

TEST(Transceiver, CmisFlatMemoryIsPassiveCopper) {
    Half lower(0);
    lower.u8(0, 0x18).u8(2, 0x80);
    EXPECT_EQ(module_pages_to_read(lower.bytes), std::vector<EepromPage>{kUpper0});
    const Transceiver t = decode_module({{kLower, lower.bytes}});
    EXPECT_EQ(t.type, "QSFP-DD");
    EXPECT_FALSE(t.diagnostics);
    EXPECT_FALSE(t.temperature_c);
}

TEST(Transceiver, UnknownShortOrMissingPages) {
    EXPECT_EQ(decode_module({}).error, EINVAL);
    EXPECT_EQ(decode_module({{kLower, std::vector<uint8_t>(64, 0x11)}}).error, EINVAL) << "a short lower page";
    Half unknown(0);
    unknown.u8(0, 0x7f);
    EXPECT_TRUE(module_pages_to_read(unknown.bytes).empty());
    const Transceiver t = decode_module({{kLower, unknown.bytes}});
    EXPECT_EQ(t.error, 0);
    EXPECT_EQ(t.spec, "");
    EXPECT_EQ(t.type, "");
    EXPECT_TRUE(module_pages_to_read({}).empty());
    // Only the lower page of an optic: identity unknown, lanes read, thresholds unset.
    const auto pages = qsfp28_sr4();
    const Transceiver lower_only = decode_module({{kLower, pages.at(kLower)}});
    EXPECT_EQ(lower_only.vendor, "");
    EXPECT_FALSE(lower_only.diagnostics) << "byte 147 says whether it is copper; unread, no optical verdicts";
}
