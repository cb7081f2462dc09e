#include "CQueueDataShims.h"

#include <stdint.h>
#include <string.h>

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as used by LevelDB and iSCSI.

static uint32_t table[8][256];

static void build_table(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t crc = n;
        for (int k = 0; k < 8; k++) {
            crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        }
        table[0][n] = crc;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t crc = table[0][n];
        for (int k = 1; k < 8; k++) {
            crc = table[0][crc & 0xff] ^ (crc >> 8);
            table[k][n] = crc;
        }
    }
}

// Built once before main runs, so no lazy initialization (and no lock) is needed later.
__attribute__((constructor)) static void qd_crc32c_init(void) {
    build_table();
}

static uint32_t crc32c_software(uint32_t crc, const uint8_t *bytes, size_t length) {
    while (length > 0 && ((uintptr_t)bytes & 7) != 0) {
        crc = table[0][(crc ^ *bytes++) & 0xff] ^ (crc >> 8);
        length--;
    }
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, bytes, 8);
        word ^= crc;
        crc = table[7][word & 0xff] ^ table[6][(word >> 8) & 0xff] ^ table[5][(word >> 16) & 0xff]
            ^ table[4][(word >> 24) & 0xff] ^ table[3][(word >> 32) & 0xff] ^ table[2][(word >> 40) & 0xff]
            ^ table[1][(word >> 48) & 0xff] ^ table[0][word >> 56];
        bytes += 8;
        length -= 8;
    }
    while (length-- > 0) {
        crc = table[0][(crc ^ *bytes++) & 0xff] ^ (crc >> 8);
    }
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc32c_hardware(uint32_t crc, const uint8_t *bytes, size_t length) {
    uint64_t crc64 = crc;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, bytes, 8);
        crc64 = __builtin_ia32_crc32di(crc64, word);
        bytes += 8;
        length -= 8;
    }
    uint32_t crc32 = (uint32_t)crc64;
    while (length-- > 0) {
        crc32 = __builtin_ia32_crc32qi(crc32, *bytes++);
    }
    return crc32;
}
#endif

uint32_t qd_crc32c_extend(uint32_t crc, const void *data, size_t length) {
    crc = ~crc;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2")) {
        return ~crc32c_hardware(crc, (const uint8_t *)data, length);
    }
#endif
    return ~crc32c_software(crc, (const uint8_t *)data, length);
}
