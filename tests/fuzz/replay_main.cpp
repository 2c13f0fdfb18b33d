// Runs a fuzzer's LLVMFuzzerTestOneInput over stored inputs, without libFuzzer: the corpora
// and every crash once found become regression tests of the normal (gcc) build.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

static std::vector<fs::path> inputs(const fs::path& p) {
    std::vector<fs::path> out;
    if (fs::is_directory(p)) {
        for (const auto& e : fs::recursive_directory_iterator(p))
            if (e.is_regular_file() && e.path().filename() != "README.md") out.push_back(e.path());
    } else {
        out.push_back(p);
    }
    std::sort(out.begin(), out.end());  // a failure names the same file on every run
    return out;
}

int main(int argc, char** argv) {
    size_t n = 0;
    for (int i = 1; i < argc; ++i) {
        if (!fs::exists(argv[i])) {
            std::fprintf(stderr, "no such input: %s\n", argv[i]);
            return 1;
        }
        for (const auto& path : inputs(argv[i])) {
            std::ifstream f(path, std::ios::binary);
            const std::vector<char> bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
            // Named before the call: a crash leaves the culprit as the last line.
            std::fprintf(stderr, "replay %s (%zu bytes)\n", path.c_str(), bytes.size());
            LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
            ++n;
        }
    }
    std::printf("%zu inputs replayed, none crashed\n", n);
    // Nothing replayed means the corpus went missing: that must not pass as green.
    return n ? 0 : 1;
}
