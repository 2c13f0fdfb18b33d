// Fuzzes the web config parser (libyaml's events, the tree built from them and the checks on
// top) with YAML text, as an operator's file holds it.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "api/web_config.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const std::string path = "/etc/rocewatch/web.yml";
    try {
        const auto c = rocewatch::api::parse_web_config(text, path);
        // What the server relies on: TLS has a certificate and a key, anchored at the config's
        // directory; users are named and bcrypt-sized; header values are one line.
        if (c.tls) {
            FUZZ_CHECK(c.tls->cert_file.starts_with('/') && c.tls->key_file.starts_with('/'));
            FUZZ_CHECK(c.tls->min_version <= c.tls->max_version);
        }
        for (const auto& [name, hash] : c.users)
            FUZZ_CHECK(!name.empty() && name.find(':') == std::string::npos && hash.size() == 60);
        for (const auto& [name, value] : c.headers) FUZZ_CHECK(value.find_first_of("\r\n") == std::string::npos);
        (void)rocewatch::api::referenced_files(c);
    } catch (const rocewatch::api::WebConfigError& e) {
        // Every error, one a line, names the file and a line of it: "path:N: ...". libyaml counts
        // \r, \n, \r\n and Unicode's NEL, LS and PS as line breaks (each has one of these bytes),
        // and one more at the end of a text whose last line has no break.
        const size_t breaks = static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char ch) {
            const auto b = static_cast<unsigned char>(ch);
            return b == '\n' || b == '\r' || b == 0x85 || b == 0xA8 || b == 0xA9;
        }));
        std::string_view all = e.what();
        while (!all.empty()) {
            const std::string_view one = all.substr(0, all.find('\n'));
            all.remove_prefix(std::min(all.size(), one.size() + 1));
            FUZZ_CHECK(one.starts_with(path + ":"));
            const std::string_view rest = one.substr(path.size() + 1);
            size_t line = 0, digits = 0;
            while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits])))
                line = line * 10 + static_cast<size_t>(rest[digits++] - '0');
            FUZZ_CHECK(digits > 0 && digits < 9 && rest.substr(digits).starts_with(": "));
            FUZZ_CHECK(line >= 1 && line <= breaks + 2);
        }
    }
    return 0;
}
