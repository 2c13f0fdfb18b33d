#!/usr/bin/env bash
# What HMAC-SHA256 costs a process in memory, by where it comes from, side by side in one run:
# a small C program reads its own RSS and PSS (/proc/self/smaps_rollup) before and after one
# HMAC-SHA256 of a 32-byte key, with the code from
#   openssl-dlopen  libcrypto.so.3 loaded with dlopen (how the daemon loads OpenSSL for TLS)
#   nettle-linked   libnettle linked (-lnettle): paid at start, used or not
#   nettle-dlopen   libnettle.so.8 loaded with dlopen (how the data port loads it: probes/hmac.hpp)
# and a program with neither as the baseline. RSS counts a library's resident pages whole, PSS
# divides them among the processes mapping them: on a node where nothing else maps the library
# the two agree; beside other users of it (a CI run's daemons) PSS reads lower. Prints the
# medians, each against the program without HMAC. Needs gcc, libssl-dev and nettle-dev.
#   bench/hmac_pss.sh [RUNS]   (3 runs each, interleaved)
set -euo pipefail
runs=${1:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/h.c" <<'C'
#include <dlfcn.h>
#include <nettle/hmac.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static long field(const char* name) {
    FILE* f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    long v = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, name, strlen(name))) v = atol(line + strlen(name));
    fclose(f);
    return v;
}
int main(void) {
    unsigned char key[32] = {1}, out[32] = {0};
    const long rss0 = field("Rss:"), pss0 = field("Pss:");
#if defined(OPENSSL_DLOPEN)
    void* h = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    const EVP_MD* (*md)(void) = (const EVP_MD* (*)(void))dlsym(h, "EVP_sha256");
    unsigned char* (*mac)(const EVP_MD*, const void*, int, const unsigned char*, size_t, unsigned char*,
                          unsigned int*) = dlsym(h, "HMAC");
    unsigned int n = 0;
    mac(md(), key, 32, (const unsigned char*)"hello", 5, out, &n);
#elif defined(NETTLE_LINKED)
    struct hmac_sha256_ctx c;
    hmac_sha256_set_key(&c, 32, key);
    hmac_sha256_update(&c, 5, (const unsigned char*)"hello");
    hmac_sha256_digest(&c, 32, out);
#elif defined(NETTLE_DLOPEN)
    void* h = dlopen("libnettle.so.8", RTLD_NOW | RTLD_LOCAL);
    void (*set_key)(struct hmac_sha256_ctx*, size_t, const uint8_t*) = dlsym(h, "nettle_hmac_sha256_set_key");
    void (*update)(struct hmac_sha256_ctx*, size_t, const uint8_t*) = dlsym(h, "nettle_hmac_sha256_update");
    void (*digest)(struct hmac_sha256_ctx*, size_t, uint8_t*) = dlsym(h, "nettle_hmac_sha256_digest");
    struct hmac_sha256_ctx c;
    set_key(&c, 32, key);
    update(&c, 5, (const unsigned char*)"hello");
    digest(&c, 32, out);
#endif
    printf("%ld %ld %ld %ld %02x\n", rss0, field("Rss:"), pss0, field("Pss:"), out[0]);
    return 0;
}
C
gcc -O2 -o "$work/none" "$work/h.c"
gcc -O2 -DOPENSSL_DLOPEN -o "$work/openssl-dlopen" "$work/h.c" -ldl
gcc -O2 -DNETTLE_LINKED -o "$work/nettle-linked" "$work/h.c" -lnettle
gcc -O2 -DNETTLE_DLOPEN -o "$work/nettle-dlopen" "$work/h.c" -ldl
declare -A rss0 rss1 pss0 pss1
for _ in $(seq "$runs"); do
    for v in none openssl-dlopen nettle-linked nettle-dlopen; do
        read -r r0 r1 p0 p1 _ < <("$work/$v")
        rss0[$v]+="$r0 "
        rss1[$v]+="$r1 "
        pss0[$v]+="$p0 "
        pss1[$v]+="$p1 "
    done
done
med() { tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
# Each column against the baseline program's same column: reading smaps_rollup and printing
# cost the baseline itself pages between its two readings.
col() { echo "$(($(eval echo "\${$1[$2]}" | med) - $(eval echo "\${$1[none]}" | med)))"; }
printf '%-15s %16s %16s %16s %16s\n' variant "RSS at start" "RSS after HMAC" "PSS at start" "PSS after HMAC"
for v in openssl-dlopen nettle-linked nettle-dlopen; do
    printf '%-15s %13s KB %13s KB %13s KB %13s KB\n' "$v" "$(col rss0 "$v")" "$(col rss1 "$v")" "$(col pss0 "$v")" \
        "$(col pss1 "$v")"
done
