/*
 * kafkatool._speedups: compiled twins of kafkatool's per-record and per-batch loops.
 *
 * Every function here mirrors one pure-Python function (named in its comment), which stays the
 * reference and the fallback. The contract, which tests/test_speedups.py checks differentially:
 *
 *   - when a function here returns a result, it is exactly the result the Python function returns
 *     for the same arguments (same values, same types);
 *   - on ANY anomaly (malformed or truncated input, a value C cannot represent, an argument of an
 *     unexpected type, a failed allocation or callback) it returns None and leaves no exception set:
 *     the caller then runs the Python function, which raises its exact error at its exact position.
 *
 * So C never has to reproduce an error message; it only has to be strict: every read is bounds
 * checked against the same limit the Python code checks, and any doubt means None.
 *
 * The batch CRC-32C and the codecs stay in their own C libraries (crc32c, zlib-ng, lz4, cramjam,
 * zstandard): the walkers call them through the Python callables they are given. CRC-32 of the
 * legacy messages written by the down-conversion loop is computed here (slicing-by-8, or
 * carry-less multiplication folding where the CPU has PCLMULQDQ).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define KT_X86_CLMUL 1
#include <immintrin.h>
#include <cpuid.h>
#endif

/* ------------------------------------------------------------------------------------------ layouts */

/* The fixed headers of the formats, one field a member as kafkatool/record/ writes them down (batch.LOG_HEADER and
 * LOG_ENTRY_PREFIX, default_records.HEADER, legacy_records.MESSAGE_HEADER_V0/V1). The bytes are big-endian, so
 * these structs are never read through: they are only measured, every offset below an offsetof, every size a
 * sizeof. The module exports the figures (LAYOUT) and tests/test_speedups.py holds them equal to the Python ones,
 * which struct.calcsize derives. */
#define PACKED __attribute__((packed))

struct log_header {                 /* Records.java: in front of every entry, whatever its magic */
    int64_t offset;                 /* v2: baseOffset; v0/v1: the message's offset (a wrapper's: its last inner one) */
    int32_t size;                   /* bytes of the entry after this field */
} PACKED;

struct log_entry_prefix {           /* what FileLogInputStream reads before it knows the format */
    struct log_header log;
    uint8_t epoch_or_crc[4];        /* v2: partitionLeaderEpoch; v0/v1: crc */
    int8_t magic;
} PACKED;

struct v2_header {                  /* DefaultRecordBatch; the records follow */
    int64_t base_offset;
    int32_t length;                 /* batch size - LOG_OVERHEAD */
    int32_t partition_leader_epoch; /* not covered by the CRC */
    int8_t magic;                   /* 2 */
    uint32_t crc;                   /* CRC-32C of attributes .. end of the batch */
    int16_t attributes;             /* bits 0-2 codec, 3 LogAppendTime, 4 transactional, 5 control, 6 delete horizon */
    int32_t last_offset_delta;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int32_t records_count;
} PACKED;

struct message_v0 {                 /* LegacyRecord, magic 0; the key, valueLength int32 and the value follow */
    uint32_t crc;                   /* CRC-32 (zlib) of magic .. end of the value */
    int8_t magic;
    int8_t attributes;              /* bits 0-2 codec */
    int32_t key_length;             /* -1: null */
} PACKED;

struct message_v1 {                 /* LegacyRecord, magic 1 */
    uint32_t crc;
    int8_t magic;
    int8_t attributes;              /* bits 0-2 codec, bit 3 LogAppendTime */
    int64_t timestamp;
    int32_t key_length;
} PACKED;

struct entry_v1 {                   /* a v1 log entry: log header, then the message */
    struct log_header log;
    struct message_v1 message;
} PACKED;

enum {
    /* batch.py */
    SIZE_OFFSET = offsetof(struct log_header, size),
    LOG_OVERHEAD = sizeof(struct log_header),
    MAGIC_OFFSET = offsetof(struct log_entry_prefix, magic),
    HEADER_SIZE_UP_TO_MAGIC = sizeof(struct log_entry_prefix),
    /* default_records.py: offsets from the start of the batch */
    V2_PARTITION_LEADER_EPOCH_OFFSET = offsetof(struct v2_header, partition_leader_epoch),
    V2_CRC_OFFSET = offsetof(struct v2_header, crc),
    V2_ATTRIBUTES_OFFSET = offsetof(struct v2_header, attributes),
    V2_LAST_OFFSET_DELTA_OFFSET = offsetof(struct v2_header, last_offset_delta),
    V2_BASE_TIMESTAMP_OFFSET = offsetof(struct v2_header, base_timestamp),
    V2_MAX_TIMESTAMP_OFFSET = offsetof(struct v2_header, max_timestamp),
    V2_PRODUCER_ID_OFFSET = offsetof(struct v2_header, producer_id),
    V2_RECORDS_COUNT_OFFSET = offsetof(struct v2_header, records_count),
    RECORD_BATCH_OVERHEAD = sizeof(struct v2_header),
    /* log.recovery.fast.HDR: the header up to maxTimestamp, what the recovery walks copy of each batch */
    RECOVERY_HEADER = offsetof(struct v2_header, producer_id),
    /* legacy_records.py: offsets from the start of the message, after the log overhead (as LegacyRecord's) */
    MSG_CRC_OFFSET = offsetof(struct message_v1, crc),
    MSG_MAGIC_OFFSET = offsetof(struct message_v1, magic),
    MSG_ATTRIBUTES_OFFSET = offsetof(struct message_v1, attributes),
    MSG_TIMESTAMP_OFFSET = offsetof(struct message_v1, timestamp),
    MSG_KEY_SIZE_OFFSET_V0 = offsetof(struct message_v0, key_length),
    MSG_KEY_SIZE_OFFSET_V1 = offsetof(struct message_v1, key_length),
    CRC_LENGTH = sizeof(uint32_t),
    VALUE_SIZE_LENGTH = sizeof(int32_t),
    RECORD_OVERHEAD_V0 = sizeof(struct message_v0) + VALUE_SIZE_LENGTH, /* the smallest message: 14 */
    RECORD_OVERHEAD_V1 = sizeof(struct message_v1) + VALUE_SIZE_LENGTH,
    /* a message from its magic to its key length: what a writer packs before the key (the CRC covers it) */
    HEAD_V0 = sizeof(struct message_v0) - offsetof(struct message_v0, magic),
    HEAD_V1 = sizeof(struct message_v1) - offsetof(struct message_v1, magic),
    /* ... and from the start of the log entry */
    ENTRY_CRC_OFFSET = offsetof(struct entry_v1, message.crc),
    ENTRY_ATTRIBUTES_OFFSET = offsetof(struct entry_v1, message.attributes),
    ENTRY_TIMESTAMP_OFFSET = offsetof(struct entry_v1, message.timestamp),
    /* default_records.MIN_RECORD_SIZE: a v2 record of one-byte varints and no key, value or headers */
    MIN_RECORD_SIZE = 7,
    CODEC_MASK = 0x07,              /* COMPRESSION_CODEC_MASK, in v2 and legacy attributes alike */
    /* scan/sketches.py: the distinct-key HyperLogLog's register bits */
    HLL_P = 12,
    HLL_M = 1 << HLL_P,
};
/* scan/keyshare.py: murmur2's seeds, Kafka's (the partitioner's) and the second of the 64-bit sketch hash */
#define KAFKA_SEED 0x9747B28CU
#define SECOND_SEED 0xCC9E2D51U

_Static_assert(MAGIC_OFFSET == offsetof(struct v2_header, magic), "v2 magic where the walks read it");
_Static_assert(MAGIC_OFFSET == offsetof(struct entry_v1, message.magic), "legacy magic where the walks read it");

/* The figures above under the names the Python modules give them (relative to the kafkatool package), exported
 * as LAYOUT for the test that holds the two equal. */
static const struct {
    const char *name;
    long value;
} layout_names[] = {
    {"record.batch.SIZE_OFFSET", SIZE_OFFSET},
    {"record.batch.LOG_OVERHEAD", LOG_OVERHEAD},
    {"record.batch.MAGIC_OFFSET", MAGIC_OFFSET},
    {"record.batch.HEADER_SIZE_UP_TO_MAGIC", HEADER_SIZE_UP_TO_MAGIC},
    {"record.default_records.PARTITION_LEADER_EPOCH_OFFSET", V2_PARTITION_LEADER_EPOCH_OFFSET},
    {"record.default_records.CRC_OFFSET", V2_CRC_OFFSET},
    {"record.default_records.ATTRIBUTES_OFFSET", V2_ATTRIBUTES_OFFSET},
    {"record.default_records.LAST_OFFSET_DELTA_OFFSET", V2_LAST_OFFSET_DELTA_OFFSET},
    {"record.default_records.BASE_TIMESTAMP_OFFSET", V2_BASE_TIMESTAMP_OFFSET},
    {"record.default_records.MAX_TIMESTAMP_OFFSET", V2_MAX_TIMESTAMP_OFFSET},
    {"record.default_records.PRODUCER_ID_OFFSET", V2_PRODUCER_ID_OFFSET},
    {"record.default_records.RECORDS_COUNT_OFFSET", V2_RECORDS_COUNT_OFFSET},
    {"record.default_records.RECORD_BATCH_OVERHEAD", RECORD_BATCH_OVERHEAD},
    {"record.default_records.MIN_RECORD_SIZE", MIN_RECORD_SIZE},
    {"record.default_records.COMPRESSION_CODEC_MASK", CODEC_MASK},
    {"log.recovery.fast.HDR", RECOVERY_HEADER},
    {"record.legacy_records.CRC_OFFSET", MSG_CRC_OFFSET},
    {"record.legacy_records.MAGIC_OFFSET", MSG_MAGIC_OFFSET},
    {"record.legacy_records.ATTRIBUTES_OFFSET", MSG_ATTRIBUTES_OFFSET},
    {"record.legacy_records.TIMESTAMP_OFFSET", MSG_TIMESTAMP_OFFSET},
    {"record.legacy_records.KEY_SIZE_OFFSET_V0", MSG_KEY_SIZE_OFFSET_V0},
    {"record.legacy_records.KEY_SIZE_OFFSET_V1", MSG_KEY_SIZE_OFFSET_V1},
    {"record.legacy_records.VALUE_SIZE_LENGTH", VALUE_SIZE_LENGTH},
    {"record.legacy_records.RECORD_OVERHEAD_V0", RECORD_OVERHEAD_V0},
    {"record.legacy_records.RECORD_OVERHEAD_V1", RECORD_OVERHEAD_V1},
    {"record.legacy_records.HEAD_V0.size", HEAD_V0},
    {"record.legacy_records.HEAD_V1.size", HEAD_V1},
    {"record.legacy_records.ENTRY_CRC_OFFSET", ENTRY_CRC_OFFSET},
    {"record.legacy_records.ENTRY_ATTRIBUTES_OFFSET", ENTRY_ATTRIBUTES_OFFSET},
    {"record.legacy_records.ENTRY_TIMESTAMP_OFFSET", ENTRY_TIMESTAMP_OFFSET},
    {"record.legacy_records.COMPRESSION_CODEC_MASK", CODEC_MASK},
    {"constants.INT32_MAX", INT32_MAX},
    {"scan.sketches.HLL_P", HLL_P},
    {"scan.keyshare.KAFKA_SEED", (long)KAFKA_SEED},
    {"scan.keyshare.SECOND_SEED", (long)SECOND_SEED},
};

/* ------------------------------------------------------------------------------------------ helpers */

static inline uint32_t be_u32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static inline int32_t be_i32(const uint8_t *p) { return (int32_t)be_u32(p); }

static inline uint32_t le_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline int16_t be_i16(const uint8_t *p) { return (int16_t)(((uint16_t)p[0] << 8) | p[1]); }

static inline int64_t be_i64(const uint8_t *p)
{
    return (int64_t)(((uint64_t)be_u32(p) << 32) | (uint64_t)be_u32(p + 4));
}

static inline void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

static inline void put_be64(uint8_t *p, uint64_t v)
{
    put_be32(p, (uint32_t)(v >> 32));
    put_be32(p + 4, (uint32_t)v);
}

/* An int argument as int64; 0 on success, -1 (no exception left) for anything else. */
static int arg_i64(PyObject *o, int64_t *out)
{
    int overflow = 0;
    long long v;
    if (!PyLong_Check(o))
        return -1;
    v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

/* ``kafkatool.varint.read_varint(buf, pos, end, max_bytes)`` without the errors: 0 and the value,
 * or -1 where the Python function raises (runs past ``end``, longer than ``max_bytes``). */
static inline int read_varint(const uint8_t *d, Py_ssize_t *pp, Py_ssize_t end, int max_bytes, int64_t *out)
{
    Py_ssize_t p = *pp, start = p;
    uint64_t r = 0;
    int shift = 0;
    for (;;) {
        uint8_t b;
        if (p >= end)
            return -1;
        b = d[p++];
        r |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80)
            break;
        shift += 7;
        if (p - start >= max_bytes)
            return -1;
    }
    if (max_bytes == 5)
        r &= 0xFFFFFFFFu;
    *out = (int64_t)(r >> 1) ^ -(int64_t)(r & 1);
    *pp = p;
    return 0;
}

/* ------------------------------------------------------------------------------------------ CRC-32 */

static uint32_t crc_tab[8][256];

static void crc32_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_tab[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int k = 1; k < 8; k++)
            crc_tab[k][i] = (crc_tab[k - 1][i] >> 8) ^ crc_tab[0][crc_tab[k - 1][i] & 0xFF];
}

/* zlib's crc32(crc, p, n): slicing-by-8. */
static uint32_t crc32_sw(uint32_t crc, const uint8_t *p, size_t n)
{
    crc = ~crc;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#if !defined(__x86_64__) && !defined(__i386__)
    while (n && ((uintptr_t)p & 7)) { /* x86 loads 8 unaligned bytes as fast: the tails of crc32_lanes are short */
        crc = crc_tab[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
        n--;
    }
#endif
    while (n >= 8) {
        uint64_t w;
        uint32_t lo, hi;
        memcpy(&w, p, 8);
        lo = (uint32_t)w ^ crc;
        hi = (uint32_t)(w >> 32);
        crc = crc_tab[7][lo & 0xFF] ^ crc_tab[6][(lo >> 8) & 0xFF] ^ crc_tab[5][(lo >> 16) & 0xFF]
            ^ crc_tab[4][lo >> 24] ^ crc_tab[3][hi & 0xFF] ^ crc_tab[2][(hi >> 8) & 0xFF]
            ^ crc_tab[1][(hi >> 16) & 0xFF] ^ crc_tab[0][hi >> 24];
        p += 8;
        n -= 8;
    }
#endif
    while (n--)
        crc = crc_tab[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

#ifdef KT_X86_CLMUL
/* CRC-32 by carry-less multiplication folding (Intel, "Fast CRC Computation for Generic Polynomials
 * Using PCLMULQDQ Instruction", 2009), with the bit-reflected constants of the IEEE polynomial, as
 * zlib-ng's and Chromium's crc32_simd use them. 64-byte blocks folded four lanes at a time, then one
 * lane, then Barrett reduction; the tail of fewer than 16 bytes goes through the tables. */
static uint32_t crc32_lanes(__m128i x1, __m128i x2, __m128i x3, __m128i x4, const uint8_t *p, size_t n);

__attribute__((target("pclmul,sse4.1")))
static uint32_t crc32_clmul(uint32_t crc, const uint8_t *p, size_t n)
{
    const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596, 0x0154442bd4);
    __m128i x0, x1, x2, x3, x4, x5, x6, x7, x8, y5, y6, y7, y8;

    if (n < 64)
        return crc32_sw(crc, p, n);
    crc = ~crc;
    x1 = _mm_loadu_si128((const __m128i *)(p + 0x00));
    x2 = _mm_loadu_si128((const __m128i *)(p + 0x10));
    x3 = _mm_loadu_si128((const __m128i *)(p + 0x20));
    x4 = _mm_loadu_si128((const __m128i *)(p + 0x30));
    x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)crc));
    x0 = k1k2;
    p += 64;
    n -= 64;
    while (n >= 64) {
        x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
        x6 = _mm_clmulepi64_si128(x2, x0, 0x00);
        x7 = _mm_clmulepi64_si128(x3, x0, 0x00);
        x8 = _mm_clmulepi64_si128(x4, x0, 0x00);
        x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
        x2 = _mm_clmulepi64_si128(x2, x0, 0x11);
        x3 = _mm_clmulepi64_si128(x3, x0, 0x11);
        x4 = _mm_clmulepi64_si128(x4, x0, 0x11);
        y5 = _mm_loadu_si128((const __m128i *)(p + 0x00));
        y6 = _mm_loadu_si128((const __m128i *)(p + 0x10));
        y7 = _mm_loadu_si128((const __m128i *)(p + 0x20));
        y8 = _mm_loadu_si128((const __m128i *)(p + 0x30));
        x1 = _mm_xor_si128(_mm_xor_si128(x1, x5), y5);
        x2 = _mm_xor_si128(_mm_xor_si128(x2, x6), y6);
        x3 = _mm_xor_si128(_mm_xor_si128(x3, x7), y7);
        x4 = _mm_xor_si128(_mm_xor_si128(x4, x8), y8);
        p += 64;
        n -= 64;
    }
    return crc32_lanes(x1, x2, x3, x4, p, n);
}

/* crc32_clmul's end: its four lanes folded into one, the rest of 16 bytes at a time, reduced to 32 bits, and the
 * tail of fewer than 16 bytes through the tables. */
__attribute__((target("pclmul,sse4.1")))
static uint32_t crc32_lanes(__m128i x1, __m128i x2, __m128i x3, __m128i x4, const uint8_t *p, size_t n)
{
    const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009e, 0x01751997d0);
    const __m128i k5k0 = _mm_set_epi64x(0x0000000000, 0x0163cd6124);
    const __m128i poly = _mm_set_epi64x(0x01f7011641, 0x01db710641);
    __m128i x0, x5;
    uint32_t crc;
    /* Fold the four lanes into one. */
    x0 = k3k4;
    x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
    x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
    x1 = _mm_xor_si128(_mm_xor_si128(x1, x2), x5);
    x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
    x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
    x1 = _mm_xor_si128(_mm_xor_si128(x1, x3), x5);
    x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
    x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
    x1 = _mm_xor_si128(_mm_xor_si128(x1, x4), x5);
    /* Single lane, 16 bytes at a time. */
    while (n >= 16) {
        x2 = _mm_loadu_si128((const __m128i *)p);
        x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
        x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
        x1 = _mm_xor_si128(_mm_xor_si128(x1, x2), x5);
        p += 16;
        n -= 16;
    }
    /* 128 -> 64 bits. */
    x2 = _mm_clmulepi64_si128(x1, x0, 0x10);
    x3 = _mm_setr_epi32(~0, 0, ~0, 0);
    x1 = _mm_srli_si128(x1, 8);
    x1 = _mm_xor_si128(x1, x2);
    x0 = k5k0;
    x2 = _mm_srli_si128(x1, 4);
    x1 = _mm_and_si128(x1, x3);
    x1 = _mm_clmulepi64_si128(x1, x0, 0x00);
    x1 = _mm_xor_si128(x1, x2);
    /* Barrett reduction to 32 bits. */
    x0 = poly;
    x2 = _mm_and_si128(x1, x3);
    x2 = _mm_clmulepi64_si128(x2, x0, 0x10);
    x2 = _mm_and_si128(x2, x3);
    x2 = _mm_clmulepi64_si128(x2, x0, 0x00);
    x1 = _mm_xor_si128(x1, x2);
    crc = (uint32_t)_mm_extract_epi32(x1, 1);
    return n ? crc32_sw(~crc, p, n) : ~crc;
}

/* The same folding four 64-byte blocks (four zmm registers of four 16-byte lanes each) at a time with AVX-512's
 * VPCLMULQDQ, for inputs of 256 bytes and more: the constants of a 256-byte distance, x^(2048+32) and
 * x^(2048-32) mod P (bit-reflected, as above), fold each register forward by 256 bytes; then the four fold into
 * one by the 64-byte constants, 64 bytes at a time after that, and its four lanes are crc32_clmul's four,
 * which it reduces. */
__attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.1")))
static uint32_t crc32_vclmul(uint32_t crc, const uint8_t *p, size_t n)
{
    const __m512i k256 = _mm512_set_epi64(0x01322d1430, 0x011542778a, 0x01322d1430, 0x011542778a,
                                          0x01322d1430, 0x011542778a, 0x01322d1430, 0x011542778a);
    const __m512i k64 = _mm512_set_epi64(0x01c6e41596, 0x0154442bd4, 0x01c6e41596, 0x0154442bd4,
                                         0x01c6e41596, 0x0154442bd4, 0x01c6e41596, 0x0154442bd4);
    __m512i z0, z1, z2, z3;
    __m128i x1, x2, x3, x4;
#define FOLD512(z, k, next) _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128((z), (k), 0x00), \
                                                      _mm512_clmulepi64_epi128((z), (k), 0x11), (next), 0x96)
    z0 = _mm512_loadu_si512((const void *)(p + 0x00));
    z1 = _mm512_loadu_si512((const void *)(p + 0x40));
    z2 = _mm512_loadu_si512((const void *)(p + 0x80));
    z3 = _mm512_loadu_si512((const void *)(p + 0xC0));
    z0 = _mm512_xor_si512(z0, _mm512_castsi128_si512(_mm_cvtsi32_si128((int)~crc)));
    p += 256;
    n -= 256;
    while (n >= 256) {
        z0 = FOLD512(z0, k256, _mm512_loadu_si512((const void *)(p + 0x00)));
        z1 = FOLD512(z1, k256, _mm512_loadu_si512((const void *)(p + 0x40)));
        z2 = FOLD512(z2, k256, _mm512_loadu_si512((const void *)(p + 0x80)));
        z3 = FOLD512(z3, k256, _mm512_loadu_si512((const void *)(p + 0xC0)));
        p += 256;
        n -= 256;
    }
    z1 = FOLD512(z0, k64, z1);
    z2 = FOLD512(z1, k64, z2);
    z3 = FOLD512(z2, k64, z3);
    while (n >= 64) {
        z3 = FOLD512(z3, k64, _mm512_loadu_si512((const void *)p));
        p += 64;
        n -= 64;
    }
#undef FOLD512
    x1 = _mm512_extracti32x4_epi32(z3, 0);
    x2 = _mm512_extracti32x4_epi32(z3, 1);
    x3 = _mm512_extracti32x4_epi32(z3, 2);
    x4 = _mm512_extracti32x4_epi32(z3, 3);
    return crc32_lanes(x1, x2, x3, x4, p, n);
}

static int have_clmul, have_vclmul;
#endif

static uint32_t crc32_any(uint32_t crc, const uint8_t *p, size_t n)
{
#ifdef KT_X86_CLMUL
    if (have_vclmul && n >= 256)
        return crc32_vclmul(crc, p, n);
    if (have_clmul)
        return crc32_clmul(crc, p, n);
#endif
    return crc32_sw(crc, p, n);
}

/* ------------------------------------------------------------------------------------------ state */

static PyTypeObject *record_type;  /* kafkatool.batch.Record */
static PyTypeObject *header_type;  /* kafkatool.batch.Header */

/* A NamedTuple instance without Python-level __new__, as ``tuple.__new__(cls, items)`` builds it. */
static inline PyObject *new_tuple_of(PyTypeObject *tp, Py_ssize_t n)
{
    return tp->tp_alloc(tp, n);
}

/* A record is a tuple of ints, bytes, None, bools and a tuple of headers (str and bytes): it can be part of no
 * reference cycle, so the cyclic GC need not track it. CPython untracks such tuples itself, but only when a collection
 * reaches them; a walk of millions of records would pay for every one of them being traversed and promoted first
 * (two thirds of a legacy inner walk's time, measured). Called once every field is set. */
static inline void untrack_record(PyObject *rec)
{
    if (PyObject_GC_IsTracked(rec))
        PyObject_GC_UnTrack(rec);
}

/* ------------------------------------------------------------------------------------------ results */

/* What the functions below return when they have more to say than a value: struct sequences (named tuples of the
 * C API), read by field name in Python. kafkatool/_speedups.pyi describes them. */

static PyStructSequence_Field reframed_fields[] = {
    {"data", "the legacy entries written"},
    {"records", "records written"},
    {"filtered", "records below first_offset, dropped"},
    {"with_headers", "records whose headers were dropped"},
    {"first_offset", "first record written (-1: none)"},
    {"last_offset", "last record written (-1: none)"},
    {"max_timestamp", "largest record timestamp written (-1 for v0 and LogAppendTime)"},
    {NULL, NULL},
};

static PyStructSequence_Field verify_walk_fields[] = {
    {"position", "where the walk stopped: the first batch it did not take"},
    {"batches", "batches walked"},
    {"records", "v2 recordsCount, plus one per uncompressed legacy entry"},
    {"unknown_counts", "compressed legacy wrappers (their record count needs decompression)"},
    {"failed_at", "the batch whose CRC check failed, just before position (-1: none)"},
    {NULL, NULL},
};

static PyStructSequence_Field headers_walk_fields[] = {
    {"position", "where the walk stopped"},
    {"headers", "batch headers appended"},
    {"size", "the size field read last: below RECORD_OVERHEAD_V0 where the walk stopped at it"},
    {NULL, NULL},
};

static PyStructSequence_Field dump_walk_fields[] = {
    {"position", "where the walk stopped: the first batch it left to Python"},
    {"batches", "batches walked"},
    {"records", "records counted"},
    {"unknown_counts", "compressed legacy wrappers whose records were not counted"},
    {"nbytes", "bytes of the batches walked"},
    {"last_offset", "the last offset followed (DumpLogSegments' lastOffset), as given when no batch was walked"},
    {"first_offset", "the first batch's first offset (None: no batch walked)"},
    {"max_last_offset", "the largest last offset (None: no batch walked)"},
    {"max_timestamp", "the largest max timestamp (None: no batch walked)"},
    {"codecs", "batches per codec id 0..7"},
    {"magics", "batches per magic 0..2"},
    {NULL, NULL},
};

static PyStructSequence_Field scan_figures_fields[] = {
    {"formats", "per codec id 0..4 of the v2 batches walked: (batches, records, bytes, uncompressed bytes)"},
    {"largest_batch", "the largest batch size, the one given when no batch was larger"},
    {"largest_position", "its position (-1: none larger than the one given)"},
    {"oversized", "batches larger than max.message.bytes"},
    {"transactional", "transactional batches"},
    {"null_keys", "records without a key"},
    {"first_followed", "(position, offset) of the first batch with records and its first record's offset, or None"},
    {"last_followed", "the last record offset followed, or None"},
    {"timestamps", "(min, max, first, last, out of order) of the record timestamps >= 0, or None: there were none"},
    {"first_offset", "the smallest first offset (None: no batch walked)"},
    {NULL, NULL},
};

static PyStructSequence_Field downconvert_run_fields[] = {
    {"position", "where the run stopped: the first batch it left to Python"},
    {"data", "the converted bytes of the run, in order"},
    {"batches", "source batches converted"},
    {"records", "records converted"},
    {"records_filtered", "records below the first offset, dropped"},
    {"headers_dropped", "records whose headers were dropped"},
    {"producer_fields_dropped", "batches whose producer id/epoch/sequence were dropped"},
    {"temporary_memory_bytes", "RecordValidationStats.temporaryMemoryBytes"},
    {"log_end_offset", "one past the last source offset (-1: no batch)"},
    {"last_offset", "the last offset written (-1: none)"},
    {"uncompressed_messages", "messages written uncompressed (one per record)"},
    {"compressed_batches", "compressed wrappers written (one per batch)"},
    {"segment_size", "bytes in the output segment after the run"},
    {"estimates", "the compression-ratio estimates of codec ids 0..3 after the run"},
    {"estimates_updated", "bit c set: the estimate of codec c changed"},
    {"wanted", "with ``out``: the bytes the batch it stopped at needed beyond the room left (0: it stopped for "
               "another reason)"},
    {NULL, NULL},
};

static PyStructSequence_Field consumer_walk_fields[] = {
    {"position", "where the walk stopped: the first entry it left to Python"},
    {"batches", "log entries taken (each a complete batch of the consumer's view)"},
    {"records_sent", "records in the entries taken"},
    {"records_returned", "records the consumer returns"},
    {"records_below_fetch_offset", "records below the position, dropped"},
    {"duplicate_offsets", "records at or below the largest offset seen, dropped"},
    {"first_returned_offset", "the first record returned (None: none)"},
    {"last_returned_offset", "the last record returned (None: none)"},
    {"max_seen", "the largest offset seen (None: none yet)"},
    {"next_fetch_offset", "the consumer's position after the walk"},
    {NULL, NULL},
};

/* The fields of recovery.fast._Builder's state after a compiled rules call (recover_rules, hop_rules). */
#define RULES_STATE_FIELDS                                                                                    \
    {"last_index_entry", "LogSegment.recover's lastIndexEntry after them"}, {"max_ts", "maxTimestampSoFar"},  \
        {"max_ts_offset", "offsetOfMaxTimestampSoFar"},                                                       \
        {"time_last_ts", "the last time index entry's timestamp"},                                            \
        {"time_last_offset", "the last time index entry's offset"},                                           \
        {"index_last", "the last offset index entry's offset (None: no entry yet)"},                          \
        {"index_count", "offset index entries"}, {"time_count", "time index entries"},                        \
        {"latest_epoch", "the leader-epoch cache's latest epoch"}, {NULL, NULL}

static PyStructSequence_Field recover_rules_fields[] = {
    {"batches", "batches taken (every header given)"},
    {"end", "the position after the last of them"},
    {"last_offset", "the last batch's last offset"},
    {"magics", "bit m set for each magic m seen"},
    RULES_STATE_FIELDS,
};

static PyStructSequence_Field hop_rules_fields[] = {
    {"batches", "batches walked and taken under the rules"},
    {"end", "the position after the last of them: where the walk goes on"},
    {"why", "why it stopped: 0 max_n batches, 1 the limit, 2 the probe found small batches, 3 a batch left to "
            "Python at ``end`` (a size below the minimum, a torn or short tail, a failed read, or rules numpy "
            "must apply)"},
    {"last_offset", "the last batch's last offset (-1: none taken)"},
    {"magics", "bit m set for each magic m seen"},
    RULES_STATE_FIELDS,
};

#define DESC(name, doc, fields) {"kafkatool._speedups." name, doc, fields, \
                                 (int)(sizeof(fields) / sizeof(fields[0]) - 1)}
static PyStructSequence_Desc result_descs[] = {
    DESC("Reframed", "reframe_v2_records: down_convert.Reframed's fields of the same names", reframed_fields),
    DESC("VerifyWalk", "verify_walk: where file_records._verify's loop got to", verify_walk_fields),
    DESC("HeadersWalk", "headers_walk and hop_walk: where recovery.fast._Walk's loops got to", headers_walk_fields),
    DESC("DumpWalk", "dump_walk: what dump.DumpEngine._walk adds up for the batches walked", dump_walk_fields),
    DESC("DownconvertRun", "downconvert_run: what convert.DownConverter.run adds up", downconvert_run_fields),
    DESC("ScanFigures", "dump_walk with a scan: what scan.stats.BatchStats adds up for the batches walked",
         scan_figures_fields),
    DESC("ConsumerWalk", "consumer_walk: what fetch.consumer_view.ConsumerView adds up", consumer_walk_fields),
    DESC("RecoverRules", "recover_rules: recovery.fast._Builder's state after the headers given", recover_rules_fields),
    DESC("HopRules", "hop_rules: where the walk got to and recovery.fast._Builder's state after it", hop_rules_fields),
};
enum { R_REFRAMED, R_VERIFY_WALK, R_HEADERS_WALK, R_DUMP_WALK, R_DOWNCONVERT_RUN, R_SCAN_FIGURES, R_CONSUMER_WALK,
       R_RECOVER_RULES, R_HOP_RULES, N_RESULTS };
static PyTypeObject *result_types[N_RESULTS];

/* The items of the tuple ``t`` (a new reference, consumed) as a result of type ``which``: NULL with the error set
 * when ``t`` is (Py_BuildValue failed) or on a failure here. */
static PyObject *result(int which, PyObject *t)
{
    PyObject *s;
    if (t == NULL)
        return NULL;
    s = PyStructSequence_New(result_types[which]);
    if (s != NULL && Py_SIZE(s) != PyTuple_GET_SIZE(t)) {
        PyErr_Format(PyExc_SystemError, "%s takes %zd fields, not %zd", result_descs[which].name, Py_SIZE(s),
                     PyTuple_GET_SIZE(t));
        Py_CLEAR(s);
    }
    if (s != NULL)
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); i++)
            PyStructSequence_SET_ITEM(s, i, Py_NewRef(PyTuple_GET_ITEM(t, i)));
    Py_DECREF(t);
    return s;
}

/* ------------------------------------------------------------------------------------------ v2 records */

/* One pass over ``count`` v2 records in ``d[p:end]`` with the checks of
 * ``default_records.parse_records`` (Kafka's ``DefaultRecord.readFrom``).
 *
 * With ``out`` set, each record is appended to it as the Python function builds it; otherwise the
 * records are only validated and the offsets of the first and last are reported, with whether the
 * offsets run consecutively. Returns 0, or -1 where the Python function raises or C cannot be exact
 * (then no exception is left set). */
typedef struct {
    int64_t base_offset;
    int64_t base_timestamp;
    int64_t log_append_time;
    int has_lat;
    int64_t base_sequence;
    /* results of a validation pass */
    int64_t first_offset;
    int64_t last_offset;
    int contiguous;
} V2Args;

static int headers_walk(const uint8_t *d, Py_ssize_t *pp, Py_ssize_t rec_end, PyObject **headers_out)
{
    /* ``default_records._parse_headers`` */
    Py_ssize_t p = *pp;
    int64_t n, kl, vl;
    PyObject *headers = NULL;
    if (read_varint(d, &p, rec_end, 5, &n) < 0)
        return -1;
    if (n < 0 || n > rec_end - p)
        return -1;
    if (headers_out != NULL) {
        headers = PyTuple_New((Py_ssize_t)n);
        if (headers == NULL)
            goto fail;
    }
    for (int64_t i = 0; i < n; i++) {
        Py_ssize_t kp;
        if (read_varint(d, &p, rec_end, 5, &kl) < 0 || kl < 0 || kl > rec_end - p)
            goto fail;
        kp = p;
        p += (Py_ssize_t)kl;
        if (read_varint(d, &p, rec_end, 5, &vl) < 0)
            goto fail;
        if (vl >= 0 && vl > rec_end - p)
            goto fail;
        if (headers != NULL) {
            PyObject *h = new_tuple_of(header_type, 2);
            PyObject *k, *v;
            if (h == NULL)
                goto fail;
            PyTuple_SET_ITEM(headers, (Py_ssize_t)i, h);
            k = PyUnicode_DecodeUTF8((const char *)d + kp, (Py_ssize_t)kl, "replace");
            if (k == NULL)
                goto fail;
            PyTuple_SET_ITEM(h, 0, k);
            if (vl >= 0) {
                v = PyBytes_FromStringAndSize((const char *)d + p, (Py_ssize_t)vl);
                if (v == NULL)
                    goto fail;
            } else {
                v = Py_NewRef(Py_None);
            }
            PyTuple_SET_ITEM(h, 1, v);
        }
        if (vl >= 0)
            p += (Py_ssize_t)vl;
    }
    *pp = p;
    if (headers_out != NULL)
        *headers_out = headers;
    return 0;
fail:
    Py_XDECREF(headers);
    PyErr_Clear();
    return -1;
}

static int v2_records_walk(const uint8_t *d, Py_ssize_t p, Py_ssize_t end, int64_t count, V2Args *a, PyObject *out,
                           Py_ssize_t *next)
{
    PyObject *empty = NULL;
    int64_t i;
    if (count < 0 || p < 0 || p > end)
        return -1;
    if (count > (end - p) / MIN_RECORD_SIZE + 1 || count * MIN_RECORD_SIZE > end - p)
        return -1;
    if (out != NULL) {
        empty = PyTuple_New(0);
        if (empty == NULL) {
            PyErr_Clear();
            return -1;
        }
    }
    a->contiguous = 1;
    for (i = 0; i < count; i++) {
        Py_ssize_t start = p, rec_end, kp = 0, vp = 0;
        int64_t length, ts_delta, od, kn, vn, offset, od_ts;
        PyObject *headers = NULL;
        if (read_varint(d, &p, end, 5, &length) < 0)
            goto fail;
        if (length < 0 || length > end - p)
            goto fail;
        rec_end = p + (Py_ssize_t)length;
        p += 1; /* attributes: unused */
        if (read_varint(d, &p, end, 10, &ts_delta) < 0)
            goto fail;
        if (read_varint(d, &p, end, 5, &od) < 0)
            goto fail;
        if (read_varint(d, &p, end, 5, &kn) < 0)
            goto fail;
        if (kn >= 0) {
            if (kn > end - p)
                goto fail;
            kp = p;
            p += (Py_ssize_t)kn;
        }
        if (read_varint(d, &p, end, 5, &vn) < 0)
            goto fail;
        if (vn >= 0) {
            if (vn > end - p)
                goto fail;
            vp = p;
            p += (Py_ssize_t)vn;
        }
        if (p >= end)
            goto fail;
        if (d[p] == 0) {
            p += 1;
        } else if (headers_walk(d, &p, rec_end, out != NULL ? &headers : NULL) < 0) {
            goto fail;
        }
        if (p != rec_end) {
            Py_XDECREF(headers);
            goto fail;
        }
        if (__builtin_add_overflow(a->base_offset, od, &offset)) {
            Py_XDECREF(headers);
            goto fail;
        }
        if (out == NULL && !a->has_lat && __builtin_add_overflow(a->base_timestamp, ts_delta, &od_ts))
            goto fail; /* as below: a time past int64 is the Python path's to give (scan_records reads it) */
        if (i == 0)
            a->first_offset = offset;
        else if (offset != a->last_offset + 1)
            a->contiguous = 0;
        a->last_offset = offset;
        if (out != NULL) {
            int64_t ts, seq;
            PyObject *rec, *item;
            if (a->has_lat) {
                ts = a->log_append_time;
            } else if (__builtin_add_overflow(a->base_timestamp, ts_delta, &ts)) {
                Py_XDECREF(headers);
                goto fail;
            }
            if (a->base_sequence < 0)
                seq = -1;
            else if (a->base_sequence > INT32_MAX - od)
                seq = od - (INT32_MAX - a->base_sequence) - 1; /* DefaultRecordBatch.incrementSequence */
            else
                seq = a->base_sequence + od;
            rec = new_tuple_of(record_type, 9);
            if (rec == NULL) {
                Py_XDECREF(headers);
                goto fail_exc;
            }
            PyList_SET_ITEM(out, (Py_ssize_t)i, rec);
            if ((item = PyLong_FromLongLong(offset)) == NULL) {
                Py_XDECREF(headers);
                goto fail_exc;
            }
            PyTuple_SET_ITEM(rec, 0, item);
            if ((item = PyLong_FromLongLong(ts)) == NULL) {
                Py_XDECREF(headers);
                goto fail_exc;
            }
            PyTuple_SET_ITEM(rec, 1, item);
            item = kn >= 0 ? PyBytes_FromStringAndSize((const char *)d + kp, (Py_ssize_t)kn) : Py_NewRef(Py_None);
            if (item == NULL) {
                Py_XDECREF(headers);
                goto fail_exc;
            }
            PyTuple_SET_ITEM(rec, 2, item);
            item = vn >= 0 ? PyBytes_FromStringAndSize((const char *)d + vp, (Py_ssize_t)vn) : Py_NewRef(Py_None);
            if (item == NULL) {
                Py_XDECREF(headers);
                goto fail_exc;
            }
            PyTuple_SET_ITEM(rec, 3, item);
            PyTuple_SET_ITEM(rec, 4, headers != NULL ? headers : Py_NewRef(empty));
            if ((item = PyLong_FromLongLong(seq)) == NULL)
                goto fail_exc;
            PyTuple_SET_ITEM(rec, 5, item);
            if ((item = PyLong_FromSsize_t(rec_end - start)) == NULL)
                goto fail_exc;
            PyTuple_SET_ITEM(rec, 6, item);
            PyTuple_SET_ITEM(rec, 7, Py_NewRef(Py_None));
            PyTuple_SET_ITEM(rec, 8, Py_NewRef(Py_None));
            untrack_record(rec);
        }
    }
    if (next != NULL)
        *next = p; /* a chunk of the records: the caller goes on from here */
    else if (p != end)
        goto fail;
    Py_XDECREF(empty);
    return 0;
fail_exc:
    PyErr_Clear();
fail:
    Py_XDECREF(empty);
    return -1;
}

/* parse_records(d, p, end, count, base_offset, base_timestamp, log_append_time, base_sequence)
 * -> list[Record] | None.  Mirrors ``default_records.parse_records``; with ``next`` set (parse_records_chunk),
 * ``parse_records_chunk_py``: the first ``count`` records from ``p``, their end stored in ``next``. */
static PyObject *parse_v2(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t *next)
{
    Py_buffer view;
    int64_t p, end, count;
    V2Args a;
    PyObject *out;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "parse_records takes 8 arguments");
        return NULL;
    }
    if (record_type == NULL)
        Py_RETURN_NONE;
    if (arg_i64(args[1], &p) || arg_i64(args[2], &end) || arg_i64(args[3], &count)
        || arg_i64(args[4], &a.base_offset) || arg_i64(args[5], &a.base_timestamp)
        || arg_i64(args[7], &a.base_sequence))
        Py_RETURN_NONE;
    a.has_lat = args[6] != Py_None;
    a.log_append_time = 0;
    if (a.has_lat && arg_i64(args[6], &a.log_append_time))
        Py_RETURN_NONE;
    if (a.base_sequence < INT32_MIN || a.base_sequence > INT32_MAX)
        Py_RETURN_NONE;
    if (!PyBytes_CheckExact(args[0]))
        Py_RETURN_NONE; /* slices of other buffer types are not bytes */
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (p < 0 || end < p || end > view.len || count < 0 || count > (end - p) / MIN_RECORD_SIZE) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    out = PyList_New((Py_ssize_t)count);
    if (out == NULL) {
        PyErr_Clear();
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    if (v2_records_walk((const uint8_t *)view.buf, (Py_ssize_t)p, (Py_ssize_t)end, count, &a, out, next) < 0) {
        Py_DECREF(out);
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    PyBuffer_Release(&view);
    return out;
}

static PyObject *sp_parse_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    return parse_v2(args, nargs, NULL);
}

/* parse_records_chunk(d, p, end, count, base_offset, base_timestamp, log_append_time, base_sequence)
 * -> (list[Record], next position) | None.  Mirrors ``default_records.parse_records_chunk_py``: ``count``
 * records from ``p`` (more may follow before ``end``). */
static PyObject *sp_parse_records_chunk(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t next = 0;
    PyObject *out;
    (void)self;
    out = parse_v2(args, nargs, &next);
    if (out == NULL || out == Py_None)
        return out;
    return Py_BuildValue("(Nn)", out, next);
}

/* legacy_deep_records(data, at, count, base, add_base, wrapper_ts, wrapper_lat) -> (list[Record], next position)
 * | None.  Mirrors ``LegacyRecordBatch._deep_records_py`` on a wrapper's decompressed inner messages: up to
 * ``count`` from byte ``at``, stopping before the first message its fast path would not take (a magic other than
 * 0/1 or a header that does not fit, a compressed inner message, a key or value length that is not -1 or does not
 * fit, an offset past int64): the Python path then decodes or raises on that one exactly. */
static PyObject *sp_legacy_deep_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    int64_t at, count, base, wrapper_ts, i;
    int add_base, wrapper_lat;
    const uint8_t *d;
    PyObject *out, *empty;
    (void)self;
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "legacy_deep_records takes 7 arguments");
        return NULL;
    }
    if (record_type == NULL || !PyBytes_CheckExact(args[0]))
        Py_RETURN_NONE;
    if (arg_i64(args[1], &at) || arg_i64(args[2], &count) || arg_i64(args[3], &base) || arg_i64(args[5], &wrapper_ts))
        Py_RETURN_NONE;
    add_base = PyObject_IsTrue(args[4]);
    wrapper_lat = PyObject_IsTrue(args[6]);
    if (add_base < 0 || wrapper_lat < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    d = (const uint8_t *)view.buf;
    if (at < 0 || at > view.len || count < 0 || count > (view.len - at) / (LOG_OVERHEAD + RECORD_OVERHEAD_V0) + 1) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    out = PyList_New(0);
    empty = PyTuple_New(0);
    if (out == NULL || empty == NULL)
        goto fail;
    for (i = 0; i < count; i++) {
        Py_ssize_t start, msg_end, p, kp = 0, vp = 0;
        int64_t offset, ts = -1;
        int32_t size, kn, vn;
        uint32_t stored_crc;
        int magic, attributes;
        PyObject *rec, *item;
        if (view.len - at < LOG_OVERHEAD)
            break;
        offset = be_i64(d + at);
        size = be_i32(d + at + SIZE_OFFSET);
        start = (Py_ssize_t)at + LOG_OVERHEAD;
        if (size < MSG_MAGIC_OFFSET + 1 || size > view.len - start)
            break;
        msg_end = start + size;
        magic = (int8_t)d[start + MSG_MAGIC_OFFSET];
        if (magic == 1 && size >= (int32_t)sizeof(struct message_v1)) {
            ts = be_i64(d + start + MSG_TIMESTAMP_OFFSET);
            kn = be_i32(d + start + MSG_KEY_SIZE_OFFSET_V1);
            p = start + (Py_ssize_t)sizeof(struct message_v1);
        } else if (magic == 0 && size >= (int32_t)sizeof(struct message_v0)) {
            kn = be_i32(d + start + MSG_KEY_SIZE_OFFSET_V0);
            p = start + (Py_ssize_t)sizeof(struct message_v0);
        } else {
            break;
        }
        attributes = d[start + MSG_ATTRIBUTES_OFFSET];
        if (attributes & CODEC_MASK)
            break;
        if (kn >= 0 && p + (Py_ssize_t)kn + VALUE_SIZE_LENGTH <= msg_end) {
            kp = p;
            p += kn;
        } else if (!(kn == -1 && p + VALUE_SIZE_LENGTH <= msg_end)) {
            break;
        }
        vn = be_i32(d + p);
        p += VALUE_SIZE_LENGTH;
        if (vn >= 0 && p + (Py_ssize_t)vn <= msg_end)
            vp = p;
        else if (vn != -1)
            break;
        if (add_base && __builtin_add_overflow(base, offset, &offset))
            break;
        if (wrapper_lat && magic != 0)
            ts = wrapper_ts;
        stored_crc = be_u32(d + start + MSG_CRC_OFFSET);
        rec = new_tuple_of(record_type, 9);
        if (rec == NULL)
            goto fail;
        if (PyList_Append(out, rec) < 0) {
            Py_DECREF(rec);
            goto fail;
        }
        Py_DECREF(rec);
        if ((item = PyLong_FromLongLong(offset)) == NULL)
            goto fail;
        PyTuple_SET_ITEM(rec, 0, item);
        if ((item = PyLong_FromLongLong(ts)) == NULL)
            goto fail;
        PyTuple_SET_ITEM(rec, 1, item);
        item = kn >= 0 ? PyBytes_FromStringAndSize((const char *)d + kp, (Py_ssize_t)kn) : Py_NewRef(Py_None);
        if (item == NULL)
            goto fail;
        PyTuple_SET_ITEM(rec, 2, item);
        item = vn >= 0 ? PyBytes_FromStringAndSize((const char *)d + vp, (Py_ssize_t)vn) : Py_NewRef(Py_None);
        if (item == NULL)
            goto fail;
        PyTuple_SET_ITEM(rec, 3, item);
        PyTuple_SET_ITEM(rec, 4, Py_NewRef(empty));
        if ((item = PyLong_FromLong(-1)) == NULL)
            goto fail;
        PyTuple_SET_ITEM(rec, 5, item);
        if ((item = PyLong_FromLong((long)size + LOG_OVERHEAD)) == NULL)
            goto fail;
        PyTuple_SET_ITEM(rec, 6, item);
        if ((item = PyLong_FromUnsignedLong(stored_crc)) == NULL)
            goto fail;
        PyTuple_SET_ITEM(rec, 7, item);
        item = crc32_any(0, d + start + MSG_MAGIC_OFFSET, (size_t)(size - MSG_MAGIC_OFFSET)) == stored_crc
            ? Py_True : Py_False;
        PyTuple_SET_ITEM(rec, 8, Py_NewRef(item));
        untrack_record(rec);
        at = msg_end;
    }
    Py_DECREF(empty);
    PyBuffer_Release(&view);
    return Py_BuildValue("(NL)", out, (long long)at);
fail:
    PyErr_Clear();
    Py_XDECREF(out);
    Py_XDECREF(empty);
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------ encoders */

typedef struct {
    uint8_t *buf;
    Py_ssize_t len, cap;
} OutBuf;

static int out_reserve(OutBuf *o, Py_ssize_t more)
{
    Py_ssize_t need = o->len + more, cap = o->cap ? o->cap : 4096;
    uint8_t *b;
    if (need <= o->cap)
        return 0;
    while (cap < need)
        cap *= 2;
    b = PyMem_Realloc(o->buf, (size_t)cap);
    if (b == NULL)
        return -1;
    o->buf = b;
    o->cap = cap;
    return 0;
}

static inline Py_ssize_t put_uvarint(uint8_t *p, uint64_t u)
{
    Py_ssize_t n = 0;
    while (u >= 0x80) {
        p[n++] = (uint8_t)((u & 0x7F) | 0x80);
        u >>= 7;
    }
    p[n++] = (uint8_t)u;
    return n;
}

static inline uint64_t zigzag32(int64_t v) { return (uint32_t)(((uint32_t)v << 1) ^ (uint32_t)((int32_t)v >> 31)); }
static inline uint64_t zigzag64(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static inline int uvarint_size(uint64_t u)
{
    int n = 1;
    while (u >= 0x80) {
        u >>= 7;
        n++;
    }
    return n;
}

/* A record tuple's key or value: bytes (its data and length) or None (length -1); anything else: -2. */
static inline int64_t bytes_or_none(PyObject *o, const char **data)
{
    if (o == Py_None) {
        *data = NULL;
        return -1;
    }
    if (!PyBytes_CheckExact(o))
        return -2;
    *data = PyBytes_AS_STRING(o);
    return PyBytes_GET_SIZE(o);
}

/* An encoder's end: its buffer and record sequence released, ``res`` returned, or None where it is NULL (an error
 * cleared: the Python twin runs). */
static PyObject *encoded(OutBuf *o, PyObject *seq, PyObject *res)
{
    if (res == NULL)
        PyErr_Clear();
    PyMem_Free(o->buf);
    Py_DECREF(seq);
    if (res == NULL)
        Py_RETURN_NONE;
    return res;
}

/* encode_records(records, base_offset, base_timestamp) -> (area, last offset, max timestamp) | None.  Mirrors
 * ``default_records.encode_records_py`` for records of bytes-or-None keys and values and no headers, offsets
 * increasing from base_offset and deltas within Kafka's int/long varints; None otherwise (the Python twin runs,
 * and raises where it must). */
static PyObject *sp_encode_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *seq, *res = NULL;
    int64_t base, base_ts, last, max_ts = -1;
    Py_ssize_t i, n;
    OutBuf o = {NULL, 0, 0};
    (void)self;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "encode_records takes 3 arguments");
        return NULL;
    }
    if (arg_i64(args[1], &base) || arg_i64(args[2], &base_ts) || base == INT64_MIN)
        Py_RETURN_NONE;
    seq = PySequence_Fast(args[0], "records");
    if (seq == NULL) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    last = base - 1;
    n = PySequence_Fast_GET_SIZE(seq);
    for (i = 0; i < n; i++) {
        PyObject *r = PySequence_Fast_GET_ITEM(seq, i);
        int64_t offset, ts, kn, vn, d_ts, d_off, size;
        const char *kd, *vd;
        PyObject *h;
        uint8_t *p;
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 5)
            goto none;
        if (arg_i64(PyTuple_GET_ITEM(r, 0), &offset) || arg_i64(PyTuple_GET_ITEM(r, 1), &ts))
            goto none;
        if (offset <= last)
            goto none;
        last = offset;
        if (ts > max_ts)
            max_ts = ts;
        if ((kn = bytes_or_none(PyTuple_GET_ITEM(r, 2), &kd)) < -1 || (vn = bytes_or_none(PyTuple_GET_ITEM(r, 3), &vd)) < -1)
            goto none;
        h = PyTuple_GET_ITEM(r, 4);
        if (!((PyTuple_Check(h) && PyTuple_GET_SIZE(h) == 0) || (PyList_Check(h) && PyList_GET_SIZE(h) == 0)))
            goto none;
        if (__builtin_sub_overflow(ts, base_ts, &d_ts) || __builtin_sub_overflow(offset, base, &d_off)
            || d_off > INT32_MAX || kn > INT32_MAX || vn > INT32_MAX)
            goto none;
        size = 1 + uvarint_size(zigzag64(d_ts)) + uvarint_size(zigzag32(d_off))
            + (kn < 0 ? 1 : uvarint_size(zigzag32(kn)) + kn) + (vn < 0 ? 1 : uvarint_size(zigzag32(vn)) + vn) + 1;
        if (size > INT32_MAX)
            goto none;
        if (out_reserve(&o, size + 5) < 0)
            goto none;
        p = o.buf + o.len;
        p += put_uvarint(p, zigzag32(size));
        *p++ = 0; /* attributes */
        p += put_uvarint(p, zigzag64(d_ts));
        p += put_uvarint(p, zigzag32(d_off));
        if (kn < 0) {
            *p++ = 1;
        } else {
            p += put_uvarint(p, zigzag32(kn));
            memcpy(p, kd, (size_t)kn);
            p += kn;
        }
        if (vn < 0) {
            *p++ = 1;
        } else {
            p += put_uvarint(p, zigzag32(vn));
            memcpy(p, vd, (size_t)vn);
            p += vn;
        }
        *p++ = 0; /* no headers */
        o.len = p - o.buf;
    }
    res = Py_BuildValue("(y#LL)", o.buf ? (const char *)o.buf : "", o.len, (long long)last, (long long)max_ts);
none:
    return encoded(&o, seq, res);
}

/* encode_entries(records, magic, attributes, timestamp, offset_shift) -> (entries, max timestamp) | None.
 * Mirrors ``legacy_records.encode_entries_py`` for records of bytes-or-None keys and values; None for anything
 * else, and for what the Python twin raises on (a timestamp below -1, a magic other than 0 and 1). */
static PyObject *sp_encode_entries(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *seq, *res = NULL;
    int64_t magic, attributes, shift, fixed_ts = 0, max_ts = -1;
    int has_ts;
    Py_ssize_t i, n;
    OutBuf o = {NULL, 0, 0};
    (void)self;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "encode_entries takes 5 arguments");
        return NULL;
    }
    if (arg_i64(args[1], &magic) || arg_i64(args[2], &attributes) || arg_i64(args[4], &shift))
        Py_RETURN_NONE;
    if (magic != 0 && magic != 1)
        Py_RETURN_NONE;
    has_ts = args[3] != Py_None;
    if (has_ts && arg_i64(args[3], &fixed_ts))
        Py_RETURN_NONE;
    seq = PySequence_Fast(args[0], "records");
    if (seq == NULL) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    n = PySequence_Fast_GET_SIZE(seq);
    for (i = 0; i < n; i++) {
        PyObject *r = PySequence_Fast_GET_ITEM(seq, i);
        int64_t offset, ts = -1, kn, vn, body;
        const char *kd, *vd;
        uint8_t *m, *p;
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) < 4)
            goto none;
        if (arg_i64(PyTuple_GET_ITEM(r, 0), &offset) || __builtin_sub_overflow(offset, shift, &offset))
            goto none;
        if (magic == 1) {
            if (has_ts)
                ts = fixed_ts;
            else if (arg_i64(PyTuple_GET_ITEM(r, 1), &ts))
                goto none;
            if (ts < -1)
                goto none;
            if (ts > max_ts)
                max_ts = ts;
        }
        if ((kn = bytes_or_none(PyTuple_GET_ITEM(r, 2), &kd)) < -1 || (vn = bytes_or_none(PyTuple_GET_ITEM(r, 3), &vd)) < -1)
            goto none;
        if (kn > INT32_MAX || vn > INT32_MAX)
            goto none;
        body = (magic == 1 ? HEAD_V1 : HEAD_V0) + (kn > 0 ? kn : 0) + VALUE_SIZE_LENGTH + (vn > 0 ? vn : 0);
        if (body + CRC_LENGTH > INT32_MAX)
            goto none;
        if (out_reserve(&o, LOG_OVERHEAD + CRC_LENGTH + body) < 0)
            goto none;
        p = o.buf + o.len;
        put_be64(p, (uint64_t)offset);
        put_be32(p + SIZE_OFFSET, (uint32_t)(body + CRC_LENGTH));
        m = p + LOG_OVERHEAD;
        p = m + MSG_MAGIC_OFFSET;
        *p++ = (uint8_t)magic;
        *p++ = (uint8_t)(attributes & 0xFF);
        if (magic == 1) {
            put_be64(p, (uint64_t)ts);
            p += 8;
        }
        put_be32(p, (uint32_t)(kn < 0 ? -1 : (int32_t)kn));
        p += 4;
        if (kn > 0) {
            memcpy(p, kd, (size_t)kn);
            p += kn;
        }
        put_be32(p, (uint32_t)(vn < 0 ? -1 : (int32_t)vn));
        p += 4;
        if (vn > 0) {
            memcpy(p, vd, (size_t)vn);
            p += vn;
        }
        put_be32(m + MSG_CRC_OFFSET, crc32_any(0, m + MSG_MAGIC_OFFSET, (size_t)body));
        o.len = p - o.buf;
    }
    res = Py_BuildValue("(y#L)", o.buf ? (const char *)o.buf : "", o.len, (long long)max_ts);
none:
    return encoded(&o, seq, res);
}

/* plan_step(chunk, i, magic, compressed, header_size, write_limit, ratio, uncompressed, records, base, last, base_ts)
 * -> (i, uncompressed, records, last, base_ts, moved) | None.  Mirrors ``estimator.plan_step_py`` (KIP-126's
 * hasRoomFor over the records of a chunk), stopping also before a record it does not size: one with headers, or
 * deltas beyond Kafka's int/long varints, or fields of unexpected types. */
static PyObject *sp_plan_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *seq;
    int64_t i0, magic, header, limit, unc, nrec, base, last = 0, base_ts = 0, moved = 0;
    int compressed, has_last, has_ts;
    double ratio;
    const float factor = (float)1.05;
    Py_ssize_t i, n;
    (void)self;
    if (nargs != 12) {
        PyErr_SetString(PyExc_TypeError, "plan_step takes 12 arguments");
        return NULL;
    }
    if (arg_i64(args[1], &i0) || arg_i64(args[2], &magic) || arg_i64(args[4], &header) || arg_i64(args[5], &limit)
        || arg_i64(args[7], &unc) || arg_i64(args[8], &nrec) || arg_i64(args[9], &base) || !PyFloat_Check(args[6]))
        Py_RETURN_NONE;
    ratio = PyFloat_AS_DOUBLE(args[6]);
    compressed = PyObject_IsTrue(args[3]);
    has_last = args[10] != Py_None;
    has_ts = args[11] != Py_None;
    if (compressed < 0 || (has_last && arg_i64(args[10], &last)) || (has_ts && arg_i64(args[11], &base_ts))) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (!PyList_Check(args[0]))
        Py_RETURN_NONE;
    seq = args[0];
    n = PyList_GET_SIZE(seq);
    if (i0 < 0 || i0 > n)
        Py_RETURN_NONE;
    for (i = (Py_ssize_t)i0; i < n; i++) {
        PyObject *r = PyList_GET_ITEM(seq, i);
        int64_t offset, ts = 0, kn, vn, size, est, rsize;
        const char *kd, *vd;
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) < 7)
            break;
        if (arg_i64(PyTuple_GET_ITEM(r, 0), &offset) || arg_i64(PyTuple_GET_ITEM(r, 6), &rsize))
            break;
        if ((kn = bytes_or_none(PyTuple_GET_ITEM(r, 2), &kd)) < -1 || (vn = bytes_or_none(PyTuple_GET_ITEM(r, 3), &vd)) < -1)
            break;
        if (magic < 2) {
            size = LOG_OVERHEAD + (magic == 0 ? RECORD_OVERHEAD_V0 : RECORD_OVERHEAD_V1) + (kn > 0 ? kn : 0)
                + (vn > 0 ? vn : 0);
            if (!has_ts && arg_i64(PyTuple_GET_ITEM(r, 1), &ts))
                break;
        } else {
            PyObject *h = PyTuple_GET_ITEM(r, 4);
            int64_t od = 0, tsd = 0, body;
            if (!((PyTuple_Check(h) && PyTuple_GET_SIZE(h) == 0) || (PyList_Check(h) && PyList_GET_SIZE(h) == 0)))
                break;
            if (arg_i64(PyTuple_GET_ITEM(r, 1), &ts))
                break;
            if (has_last && (__builtin_sub_overflow(last, base, &od) || od >= INT32_MAX || od < INT32_MIN))
                break;
            if (has_last)
                od += 1;
            if (has_ts && __builtin_sub_overflow(ts, base_ts, &tsd))
                break;
            if (kn > INT32_MAX || vn > INT32_MAX)
                break;
            body = 1 + uvarint_size(zigzag64(tsd)) + uvarint_size(zigzag32(od))
                + (kn < 0 ? 1 : uvarint_size(zigzag32(kn)) + kn) + (vn < 0 ? 1 : uvarint_size(zigzag32(vn)) + vn) + 1;
            if (body > INT32_MAX)
                break;
            size = uvarint_size(zigzag32(body)) + body;
        }
        if (nrec > 0) { /* hasRoomFor: the first record always fits */
            if (compressed) {
                float a = (float)((double)unc * ratio);
                float b = (float)((double)a * (double)factor);
                if (!(b < 9.2e18f && b > -9.2e18f))
                    break;
                est = header + (int64_t)b;
            } else {
                est = header + unc;
            }
            if (limit <= est || limit < est + size)
                break;
        }
        unc += size;
        nrec += 1;
        last = offset;
        has_last = 1;
        if (!has_ts) {
            base_ts = ts;
            has_ts = 1;
        }
        moved += rsize;
    }
    if (has_last && has_ts)
        return Py_BuildValue("(nLLLLL)", i, (long long)unc, (long long)nrec, (long long)last, (long long)base_ts,
                             (long long)moved);
    if (has_last)
        return Py_BuildValue("(nLLLOL)", i, (long long)unc, (long long)nrec, (long long)last, Py_None,
                             (long long)moved);
    if (has_ts)
        return Py_BuildValue("(nLLOLL)", i, (long long)unc, (long long)nrec, Py_None, (long long)base_ts,
                             (long long)moved);
    return Py_BuildValue("(nLLOOL)", i, (long long)unc, (long long)nrec, Py_None, Py_None, (long long)moved);
}

/* ------------------------------------------------------------------------------------------ dump's JSON lines */

/* A key or value as ``dump --format json`` writes it with the utf8 encoding: ``null``, or a JSON string. Bytes of
 * printable ASCII without ``"`` or ``\`` are written as they are; anything else goes through ``enc`` (the renderer's
 * own encoder: UTF-8 decoding with U+FFFD, JSON escapes), so every other case is the Python path's. */
static int json_put_bytes(OutBuf *o, PyObject *b, PyObject *enc)
{
    Py_ssize_t n, i;
    const unsigned char *s;
    if (b == Py_None) {
        if (out_reserve(o, 4) < 0)
            return -1;
        memcpy(o->buf + o->len, "null", 4);
        o->len += 4;
        return 0;
    }
    if (!PyBytes_CheckExact(b))
        return -1;
    n = PyBytes_GET_SIZE(b);
    s = (const unsigned char *)PyBytes_AS_STRING(b);
    for (i = 0; i < n; i++)
        if (s[i] < 0x20 || s[i] > 0x7E || s[i] == '"' || s[i] == '\\')
            break;
    if (i == n) {
        if (out_reserve(o, n + 2) < 0)
            return -1;
        o->buf[o->len] = '"';
        memcpy(o->buf + o->len + 1, s, (size_t)n);
        o->buf[o->len + 1 + n] = '"';
        o->len += n + 2;
        return 0;
    } else {
        PyObject *t = PyObject_CallOneArg(enc, b);
        const char *u;
        Py_ssize_t un;
        if (t == NULL)
            return -1;
        if (!PyUnicode_Check(t) || (u = PyUnicode_AsUTF8AndSize(t, &un)) == NULL || out_reserve(o, un) < 0) {
            Py_DECREF(t);
            return -1;
        }
        memcpy(o->buf + o->len, u, (size_t)un);
        o->len += un;
        Py_DECREF(t);
        return 0;
    }
}

static int json_put(OutBuf *o, const char *s, Py_ssize_t n)
{
    if (out_reserve(o, n) < 0)
        return -1;
    memcpy(o->buf + o->len, s, (size_t)n);
    o->len += n;
    return 0;
}

static int json_put_int(OutBuf *o, const char *name, PyObject *v)
{
    char tmp[64];
    int64_t x;
    int k;
    if (arg_i64(v, &x))
        return -1;
    k = snprintf(tmp, sizeof tmp, "%s%lld", name, (long long)x);
    return json_put(o, tmp, k);
}

/* json_record_lines(records, head, v2, enc) -> list[str | None] | None.  ``JsonRenderer.record_lines``' line of each
 * record without headers (``head``: the line's start, up to the offset field), None for a record with headers (the
 * Python path writes that one); None for anything unexpected. */
static PyObject *sp_json_record_lines(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *seq, *out = NULL;
    const char *head;
    Py_ssize_t head_n, i, n;
    int v2;
    OutBuf o = {NULL, 0, 0};
    (void)self;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "json_record_lines takes 4 arguments");
        return NULL;
    }
    if (!PyUnicode_Check(args[1]) || (head = PyUnicode_AsUTF8AndSize(args[1], &head_n)) == NULL) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    v2 = PyObject_IsTrue(args[2]);
    if (v2 < 0 || !PyList_Check(args[0])) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    seq = args[0];
    n = PyList_GET_SIZE(seq);
    out = PyList_New(n);
    if (out == NULL)
        goto fail;
    for (i = 0; i < n; i++) {
        PyObject *r = PyList_GET_ITEM(seq, i), *line, *k, *v, *h;
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) < 9)
            goto fail;
        h = PyTuple_GET_ITEM(r, 4);
        if (!PyTuple_Check(h) || PyTuple_GET_SIZE(h) != 0) {
            PyList_SET_ITEM(out, i, Py_NewRef(Py_None));
            continue;
        }
        k = PyTuple_GET_ITEM(r, 2);
        v = PyTuple_GET_ITEM(r, 3);
        if ((k != Py_None && !PyBytes_CheckExact(k)) || (v != Py_None && !PyBytes_CheckExact(v)))
            goto fail;
        o.len = 0;
        if (json_put(&o, head, head_n) < 0 || json_put_int(&o, "\"offset\":", PyTuple_GET_ITEM(r, 0)) < 0
            || json_put_int(&o, ",\"timestamp\":", PyTuple_GET_ITEM(r, 1)) < 0
            || json_put_int(&o, ",\"size\":", PyTuple_GET_ITEM(r, 6)) < 0)
            goto fail;
        {
            char tmp[96];
            int c = snprintf(tmp, sizeof tmp, ",\"key_size\":%lld,\"value_size\":%lld,\"key\":",
                             (long long)(k == Py_None ? -1 : PyBytes_GET_SIZE(k)),
                             (long long)(v == Py_None ? -1 : PyBytes_GET_SIZE(v)));
            if (json_put(&o, tmp, c) < 0)
                goto fail;
        }
        if (json_put_bytes(&o, k, args[3]) < 0 || json_put(&o, ",\"value\":", 9) < 0
            || json_put_bytes(&o, v, args[3]) < 0 || json_put(&o, ",\"headers\":[]", 13) < 0)
            goto fail;
        if (v2) {
            if (json_put_int(&o, ",\"sequence\":", PyTuple_GET_ITEM(r, 5)) < 0)
                goto fail;
        } else {
            PyObject *ok = PyTuple_GET_ITEM(r, 8);
            int t;
            if (json_put_int(&o, ",\"crc\":", PyTuple_GET_ITEM(r, 7)) < 0)
                goto fail;
            t = PyObject_IsTrue(ok);
            if (t < 0 || json_put(&o, t ? ",\"crc_valid\":true" : ",\"crc_valid\":false", t ? 17 : 18) < 0)
                goto fail;
        }
        if (json_put(&o, "}", 1) < 0)
            goto fail;
        line = PyUnicode_DecodeUTF8((const char *)o.buf, o.len, "strict");
        if (line == NULL)
            goto fail;
        PyList_SET_ITEM(out, i, line);
    }
    PyMem_Free(o.buf);
    return out;
fail:
    PyErr_Clear();
    PyMem_Free(o.buf);
    Py_XDECREF(out);
    Py_RETURN_NONE;
}

/* validate_records(d, p, end, count, base_offset) -> (first_offset, last_offset, contiguous) | None
 * The records ``parse_records`` would return exist (it would not raise) and these are their offsets;
 * (None, None, True) for no records. None: parse_records raises, or C cannot tell. */
static PyObject *sp_validate_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    int64_t p, end, count;
    V2Args a;
    (void)self;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "validate_records takes 5 arguments");
        return NULL;
    }
    if (arg_i64(args[1], &p) || arg_i64(args[2], &end) || arg_i64(args[3], &count)
        || arg_i64(args[4], &a.base_offset))
        Py_RETURN_NONE;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (p < 0 || end < p || end > view.len || count < 0 || count > (end - p) / MIN_RECORD_SIZE) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    a.has_lat = 0;
    a.base_timestamp = a.log_append_time = 0;
    a.base_sequence = -1;
    a.first_offset = a.last_offset = 0;
    if (v2_records_walk((const uint8_t *)view.buf, (Py_ssize_t)p, (Py_ssize_t)end, count, &a, NULL, NULL) < 0) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    PyBuffer_Release(&view);
    if (count == 0)
        return Py_BuildValue("(OOO)", Py_None, Py_None, Py_True);
    return Py_BuildValue("(LLO)", (long long)a.first_offset, (long long)a.last_offset,
                         a.contiguous ? Py_True : Py_False);
}

/* ------------------------------------------------------------------------------------------ down-conversion */

/* What reframe_core wrote: the counts of ``down_convert.Reframed`` (record_bytes and inner_bytes are
 * the input's and the output's lengths). */
typedef struct {
    int64_t written, filtered, with_headers, first, last, max_ts;
} Reframe;

/* The most bytes reframe_into may write for ``count`` records in ``end`` bytes: each entry is at most 27 bytes
 * longer than its v2 record (34 + key + value vs 7 + key + value); -1 for arguments it refuses anyway. */
static Py_ssize_t reframe_cap(Py_ssize_t end, int64_t count)
{
    if (count < 0 || count > end / MIN_RECORD_SIZE || end > INT32_MAX)
        return -1;
    return end + (Py_ssize_t)count * (LOG_OVERHEAD + RECORD_OVERHEAD_V1 - MIN_RECORD_SIZE);
}

/* The legacy messages of ``count`` v2 records in d[0:end] (``down_convert.reframe_v2_records``) written at
 * ``dst``, which holds reframe_cap(end, count) bytes: their length, or -1 wherever the Python function must run
 * instead (nothing else to undo: what was written is garbage past the caller's end). */
static Py_ssize_t reframe_into(const uint8_t *d, Py_ssize_t end, int64_t count, int64_t base_offset,
                               int64_t base_ts, int has_lat, int64_t lat, int64_t to_magic, int64_t attributes,
                               int has_first, int64_t first_offset, int relative, int ordered, int64_t lo, int64_t hi,
                               uint8_t *dst, Reframe *r)
{
    int v1, per_record_ts;
    int64_t fixed_ts, written = 0, filtered = 0, with_headers = 0, first = -1, last = -1, max_ts = -1, rel_base = 0;
    int64_t prev = 0;
    Py_ssize_t p = 0, cap = reframe_cap(end, count);
    uint8_t *o = dst;
    if (attributes < -128 || attributes > 127) /* struct's "b" */
        return -1;
    if (cap < 0)
        return -1;
    v1 = to_magic == 1;
    if (v1 && has_lat && lat < -1)
        return -1;
    per_record_ts = v1 && !has_lat;
    fixed_ts = has_lat ? lat : -1;
    for (int64_t i = 0; i < count; i++) {
        Py_ssize_t rec_end, kp = 0, vp = 0, body;
        int64_t length, ts_delta, od, kn, vn, offset, ts, klen;
        uint8_t *m, *msg;
        int headers;
        if (read_varint(d, &p, end, 5, &length) < 0 || length < 0 || length > end - p)
            goto defer;
        rec_end = p + (Py_ssize_t)length;
        p += 1; /* attributes */
        if (read_varint(d, &p, end, 10, &ts_delta) < 0)
            goto defer;
        if (read_varint(d, &p, end, 5, &od) < 0)
            goto defer;
        if (read_varint(d, &p, end, 5, &kn) < 0)
            goto defer;
        if (kn >= 0) {
            if (kn > end - p)
                goto defer;
            kp = p;
            p += (Py_ssize_t)kn;
            klen = kn;
        } else if (kn == -1) {
            kn = 0;
            klen = -1;
        } else {
            goto defer;
        }
        if (read_varint(d, &p, end, 5, &vn) < 0)
            goto defer;
        if (vn >= 0) {
            if (vn > end - p)
                goto defer;
            vp = p;
            p += (Py_ssize_t)vn;
        } else if (vn != -1) {
            goto defer;
        }
        if (p >= end)
            goto defer;
        if (d[p] == 0) {
            p += 1;
            headers = 0;
        } else {
            if (headers_walk(d, &p, rec_end, NULL) < 0)
                goto defer;
            headers = 1;
        }
        if (p != rec_end)
            goto defer;
        if (__builtin_add_overflow(base_offset, od, &offset))
            goto defer;
        /* ``ordered`` (a converter's run): record/validate.py's checks, offsets increase inside [lo, hi] */
        if (ordered && (offset < lo || offset > hi || (i > 0 && offset <= prev)))
            goto defer;
        prev = offset;
        if (has_first && offset < first_offset) {
            filtered++;
            continue;
        }
        if (first < 0) {
            first = offset;
            if (relative && v1)
                rel_base = offset;
        }
        if (headers)
            with_headers++;
        if (per_record_ts) {
            if (__builtin_add_overflow(base_ts, ts_delta, &ts))
                goto defer;
            if (ts > max_ts)
                max_ts = ts;
            else if (ts < -1)
                goto defer;
        } else {
            ts = fixed_ts;
        }
        /* log header, message header (the CRC covers it from the magic on), key, valueLength, value */
        msg = o + LOG_OVERHEAD;
        body = (v1 ? HEAD_V1 : HEAD_V0) + (Py_ssize_t)kn + VALUE_SIZE_LENGTH + (vn >= 0 ? (Py_ssize_t)vn : 0);
        if ((o - dst) + LOG_OVERHEAD + CRC_LENGTH + body > cap)
            goto defer; /* cannot happen (see reframe_cap); never write past the buffer */
        {
            int64_t rel;
            if (__builtin_sub_overflow(offset, rel_base, &rel))
                goto defer;
            put_be64(o, (uint64_t)rel);
        }
        put_be32(o + SIZE_OFFSET, (uint32_t)(CRC_LENGTH + body));
        msg[MSG_MAGIC_OFFSET] = v1 ? 1 : 0;
        msg[MSG_ATTRIBUTES_OFFSET] = (uint8_t)(int8_t)attributes;
        if (v1) {
            put_be64(msg + MSG_TIMESTAMP_OFFSET, (uint64_t)ts);
            put_be32(msg + MSG_KEY_SIZE_OFFSET_V1, (uint32_t)(int32_t)klen);
            m = msg + sizeof(struct message_v1);
        } else {
            put_be32(msg + MSG_KEY_SIZE_OFFSET_V0, (uint32_t)(int32_t)klen);
            m = msg + sizeof(struct message_v0);
        }
        if (kn > 0) {
            memcpy(m, d + kp, (size_t)kn);
            m += kn;
        }
        if (vn >= 0) {
            put_be32(m, (uint32_t)vn);
            m += 4;
            memcpy(m, d + vp, (size_t)vn);
            m += vn;
        } else {
            put_be32(m, 0xFFFFFFFFu);
            m += 4;
        }
        put_be32(msg + MSG_CRC_OFFSET, crc32_any(0, msg + MSG_MAGIC_OFFSET, (size_t)body));
        o = m;
        written++;
        last = offset;
    }
    if (p != end)
        goto defer;
    r->written = written;
    r->filtered = filtered;
    r->with_headers = with_headers;
    r->first = first;
    r->last = last;
    r->max_ts = max_ts;
    return o - dst;
defer:
    return -1;
}

/* reframe_into as a new bytes object, or NULL with no exception set wherever the Python function must run. */
static PyObject *reframe_core(const uint8_t *d, Py_ssize_t end, int64_t count, int64_t base_offset, int64_t base_ts,
                              int has_lat, int64_t lat, int64_t to_magic, int64_t attributes, int has_first,
                              int64_t first_offset, int relative, int ordered, int64_t lo, int64_t hi, Reframe *r)
{
    Py_ssize_t cap = reframe_cap(end, count), n;
    PyObject *outb;
    if (cap < 0)
        return NULL;
    outb = PyBytes_FromStringAndSize(NULL, cap);
    if (outb == NULL) {
        PyErr_Clear();
        return NULL;
    }
    n = reframe_into(d, end, count, base_offset, base_ts, has_lat, lat, to_magic, attributes, has_first, first_offset,
                     relative, ordered, lo, hi, (uint8_t *)PyBytes_AS_STRING(outb), r);
    if (n < 0) {
        Py_DECREF(outb);
        return NULL;
    }
    if (_PyBytes_Resize(&outb, n) < 0) {
        PyErr_Clear();
        return NULL;
    }
    return outb;
}

/* reframe_v2_records(d, count, base_offset, base_timestamp, log_append_time, to_magic, attributes,
 *                    first_offset, relative)
 * -> Reframed(data, records, filtered, with_headers, first_offset, last_offset, max_timestamp) | None
 * Mirrors ``down_convert.reframe_v2_records`` (its Reframed fields of the same names; record_bytes = len(d) and
 * inner_bytes = len(data) are left to the caller). */
static PyObject *sp_reframe_v2_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    int64_t count, base_offset, base_ts, lat = 0, to_magic, attributes, first_offset = 0;
    int has_lat, has_first, relative;
    PyObject *outb;
    Reframe r;
    (void)self;
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "reframe_v2_records takes 9 arguments");
        return NULL;
    }
    if (arg_i64(args[1], &count) || arg_i64(args[2], &base_offset) || arg_i64(args[3], &base_ts)
        || arg_i64(args[5], &to_magic) || arg_i64(args[6], &attributes))
        Py_RETURN_NONE;
    has_lat = args[4] != Py_None;
    if (has_lat && arg_i64(args[4], &lat))
        Py_RETURN_NONE;
    has_first = args[7] != Py_None;
    if (has_first && arg_i64(args[7], &first_offset))
        Py_RETURN_NONE;
    relative = PyObject_IsTrue(args[8]);
    if (relative < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    outb = reframe_core((const uint8_t *)view.buf, view.len, count, base_offset, base_ts, has_lat, lat, to_magic,
                        attributes, has_first, first_offset, relative, 0, 0, 0, &r);
    PyBuffer_Release(&view);
    if (outb == NULL)
        Py_RETURN_NONE;
    return result(R_REFRAMED, Py_BuildValue("(NLLLLLL)", outb, (long long)r.written, (long long)r.filtered,
                                            (long long)r.with_headers, (long long)r.first, (long long)r.last,
                                            (long long)r.max_ts));
}

/* The log entry of a compressed legacy wrapper (``down_convert.wrapper_entry_py``) whose value is the
 * ``nparts`` byte ranges ``v[i][0:n[i]]`` one after the other: a new bytes object, or NULL with no
 * exception set wherever the Python function must run instead. */
static PyObject *wrapper_parts(int64_t magic, int64_t attributes, int64_t ts, int64_t last_offset, int nparts,
                               const uint8_t *const *v, const Py_ssize_t *n)
{
    Py_ssize_t head, total, len = 0;
    PyObject *outb;
    uint8_t *o, *msg, *m;
    if ((magic != 0 && magic != 1) || attributes < -128 || attributes > 127 || (magic == 1 && ts < -1))
        return NULL;
    for (int i = 0; i < nparts; i++) {
        if (n[i] < 0 || n[i] > INT32_MAX - len)
            return NULL;
        len += n[i];
    }
    head = (magic == 1 ? HEAD_V1 : HEAD_V0) + VALUE_SIZE_LENGTH; /* magic attributes [ts] keylen vallen */
    if (len > INT32_MAX - CRC_LENGTH - head)
        return NULL;
    total = LOG_OVERHEAD + CRC_LENGTH + head + len;
    outb = PyBytes_FromStringAndSize(NULL, total);
    if (outb == NULL) {
        PyErr_Clear();
        return NULL;
    }
    o = (uint8_t *)PyBytes_AS_STRING(outb);
    msg = o + LOG_OVERHEAD;
    put_be64(o, (uint64_t)last_offset);
    put_be32(o + SIZE_OFFSET, (uint32_t)(CRC_LENGTH + head + len));
    msg[MSG_MAGIC_OFFSET] = (uint8_t)magic;
    msg[MSG_ATTRIBUTES_OFFSET] = (uint8_t)(int8_t)attributes;
    if (magic == 1) {
        put_be64(msg + MSG_TIMESTAMP_OFFSET, (uint64_t)ts);
        m = msg + MSG_KEY_SIZE_OFFSET_V1;
    } else {
        m = msg + MSG_KEY_SIZE_OFFSET_V0;
    }
    put_be32(m, 0xFFFFFFFFu); /* null key */
    put_be32(m + sizeof(int32_t), (uint32_t)len);
    m += sizeof(int32_t) + VALUE_SIZE_LENGTH;
    for (int i = 0; i < nparts; i++) {
        if (n[i] > 0)
            memcpy(m, v[i], (size_t)n[i]);
        m += n[i];
    }
    put_be32(msg + MSG_CRC_OFFSET, crc32_any(0, msg + MSG_MAGIC_OFFSET, (size_t)(head + len)));
    return outb;
}

static PyObject *wrapper_core(int64_t magic, int64_t attributes, int64_t ts, int64_t last_offset, const uint8_t *v,
                              Py_ssize_t n)
{
    return wrapper_parts(magic, attributes, ts, last_offset, 1, &v, &n);
}

/* legacy_wrapper(magic, attributes, timestamp, last_offset, value) -> bytes | None
 * Mirrors ``down_convert.wrapper_entry_py``: the log entry of a compressed legacy wrapper (null key),
 * [offset][size][crc] magic attributes [timestamp (v1)] keylen=-1 vallen value, in one allocation. */
static PyObject *sp_legacy_wrapper(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t magic, attributes, ts, last_offset;
    Py_buffer view;
    PyObject *outb;
    (void)self;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "legacy_wrapper takes 5 arguments");
        return NULL;
    }
    if (arg_i64(args[0], &magic) || arg_i64(args[1], &attributes) || arg_i64(args[2], &ts)
        || arg_i64(args[3], &last_offset))
        Py_RETURN_NONE;
    if (PyObject_GetBuffer(args[4], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    outb = wrapper_core(magic, attributes, ts, last_offset, (const uint8_t *)view.buf, view.len);
    PyBuffer_Release(&view);
    if (outb == NULL)
        Py_RETURN_NONE;
    return outb;
}

/* crc32(data, value=0) -> int: zlib's CRC-32 (exposed for the tests). */
static PyObject *sp_crc32(PyObject *self, PyObject *args)
{
    Py_buffer view;
    unsigned int value = 0;
    uint32_t crc;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*|I:crc32", &view, &value))
        return NULL;
    crc = crc32_any((uint32_t)value, (const uint8_t *)view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

/* ------------------------------------------------------------------------------------------ batch walks */

/* fn(memoryview of buf[a:b]) as an unsigned 32-bit CRC; -1 on any failure (exception cleared). */
/* After a failed call into Python: 1 with the error kept when it is no Exception (KeyboardInterrupt,
 * SystemExit: the caller returns NULL so that Ctrl-C is never swallowed), else 0 with it cleared (the
 * caller defers: the Python twin reruns and raises its own error). */
static int keep_fatal_error(void)
{
    if (!PyErr_ExceptionMatches(PyExc_Exception))
        return 1;
    PyErr_Clear();
    return 0;
}

/* ``obj`` (a new reference, or NULL after a failed call) with its bytes in ``v``. NULL when the call failed
 * or the result has no buffer, with *fatal = keep_fatal_error() (1: return NULL, the error propagates;
 * 0: defer to the Python path). The caller releases ``v`` and the object. */
static PyObject *take_buffer(PyObject *obj, Py_buffer *v, int *fatal)
{
    if (obj != NULL && PyObject_GetBuffer(obj, v, PyBUF_SIMPLE) == 0)
        return obj;
    Py_XDECREF(obj);
    *fatal = keep_fatal_error();
    return NULL;
}

/* ``fn(codec, memoryview of base[a:b])`` through take_buffer: the decompressed records area. */
static PyObject *call_decompress(PyObject *fn, int codec, const uint8_t *base, Py_ssize_t a, Py_ssize_t b,
                                 Py_buffer *v, int *fatal)
{
    PyObject *r = NULL, *mv = PyMemoryView_FromMemory((char *)(base + a), b - a, PyBUF_READ);
    if (mv != NULL) {
        r = PyObject_CallFunction(fn, "iO", codec, mv);
        Py_DECREF(mv);
    }
    return take_buffer(r, v, fatal);
}

/* The codec callables of downconvert_run, in this order (``convert.DownConverter`` builds the tuple). */
enum { F_CRC32C, F_DECOMPRESS, F_COMPRESS, F_SNAPPY_BLOCK, F_LZ4_BLOCK, F_SNAPPY_LEN, F_SNAPPY_UNBLOCK, F_LZ4_UNBLOCK,
       N_FNS };

/* A v2 records area d[0:n] of codec 1-3 decompressed, as ``codecs.decompress`` with ``limit``: a snappy-java
 * stream of one chunk and Kafka's lz4 frame of one block through the block functions that function calls
 * (their checks, without its Python), anything else through ``decompress`` itself. NULL as take_buffer;
 * past ``limit`` NULL with *fatal 0 (the Python path raises). */
static PyObject *decompress_area(int codec, const uint8_t *d, Py_ssize_t n, int64_t limit, PyObject *const *fns,
                                 Py_buffer *v, int *fatal)
{
    if (codec == 2 && n >= 20 && memcmp(d, "\x82SNAPPY\0", 8) == 0 && be_i32(d + 16) >= 0
        && (Py_ssize_t)be_i32(d + 16) + 20 == n) {
        /* _snappy_decompress of one chunk: _snappy_raw_block(d[20:]) */
        PyObject *r, *mv = PyMemoryView_FromMemory((char *)(d + 20), n - 20, PyBUF_READ);
        long long out_len;
        if (mv == NULL)
            return take_buffer(NULL, v, fatal);
        r = PyObject_CallOneArg(fns[F_SNAPPY_LEN], mv);
        out_len = r != NULL ? PyLong_AsLongLong(r) : -1;
        Py_XDECREF(r);
        if (out_len < 0 || out_len > limit) {
            Py_DECREF(mv);
            if (PyErr_Occurred())
                return take_buffer(NULL, v, fatal);
            *fatal = 0;
            return NULL;
        }
        r = PyObject_CallOneArg(fns[F_SNAPPY_UNBLOCK], mv);
        Py_DECREF(mv);
        return take_buffer(r, v, fatal);
    }
    if (codec == 3 && n >= 11 && le_u32(d) == 0x184D2204u && d[4] == 0x60 && d[5] == 0x40 && d[6] == 0x82) {
        /* _lz4_decompress's fast path: one compressed block of up to 64 KiB, then the end mark */
        uint32_t size = le_u32(d + 7);
        if (size > 0 && size <= 65536 && n - 11 - (Py_ssize_t)size >= 4 && (le_u32(d + 11 + size) & 0x7FFFFFFFu) == 0) {
            PyObject *r = NULL, *mv = PyMemoryView_FromMemory((char *)(d + 11), (Py_ssize_t)size, PyBUF_READ);
            if (mv != NULL) {
                r = PyObject_CallOneArg(fns[F_LZ4_UNBLOCK], mv);
                Py_DECREF(mv);
            }
            r = take_buffer(r, v, fatal);
            if (r != NULL && v->len > limit) {
                PyBuffer_Release(v);
                Py_DECREF(r);
                *fatal = 0;
                return NULL;
            }
            return r;
        }
    }
    return call_decompress(fns[F_DECOMPRESS], codec, d, 0, n, v, fatal);
}

/* The CRC ``fn`` returns for base[a:b]: -1 on an error to defer on, -2 on one to propagate. */
static int64_t call_crc(PyObject *fn, const uint8_t *base, Py_ssize_t a, Py_ssize_t b)
{
    PyObject *mv, *r;
    unsigned long v;
    mv = PyMemoryView_FromMemory((char *)(base + a), b - a, PyBUF_READ);
    if (mv == NULL)
        return keep_fatal_error() ? -2 : -1;
    r = PyObject_CallOneArg(fn, mv);
    Py_DECREF(mv);
    if (r == NULL)
        return keep_fatal_error() ? -2 : -1;
    v = PyLong_AsUnsignedLong(r);
    Py_DECREF(r);
    if (v == (unsigned long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    return (int64_t)(v & 0xFFFFFFFFu);
}

/* The bytes a batch walk runs over: ``obj``'s buffer in ``view`` when ``p`` and ``end`` lie within it,
 * else NULL with nothing held and no error set (the walk defers to Python). */
static const uint8_t *walk_buffer(PyObject *obj, int64_t p, int64_t end, Py_buffer *view)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return NULL;
    }
    if (p < 0 || end < 0 || end > view->len) {
        PyBuffer_Release(view);
        return NULL;
    }
    return (const uint8_t *)view->buf;
}

/* verify_walk(buf, p, stop, end, crc32c, crc32) -> VerifyWalk(position, batches, records, unknown_counts, failed_at)
 *
 * The loop of ``file_records._verify`` from ``p``: walks whole batches while they start before
 * ``stop`` (and the walk rules allow another), adding up what it adds up, and returns where it
 * stopped. ``failed_at`` is the position of a batch whose check failed, where it stopped just after
 * it (its counts are included, as the Python loop counts it too), else -1: the caller builds that
 * batch's error and calls again. The walk's own stops (size below 14, size past the end, short
 * tail) are left to the caller, which sees ``p`` where they are. */
static PyObject *sp_verify_walk(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    int64_t p, stop, end, batches = 0, records = 0, unknown = 0;
    PyObject *crc32c_fn, *crc32_fn;
    const uint8_t *buf;
    int64_t failed_at = -1;
    (void)self;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "verify_walk takes 6 arguments");
        return NULL;
    }
    if (arg_i64(args[1], &p) || arg_i64(args[2], &stop) || arg_i64(args[3], &end))
        Py_RETURN_NONE;
    crc32c_fn = args[4];
    crc32_fn = args[5];
    buf = walk_buffer(args[0], p, end, &view);
    if (buf == NULL)
        Py_RETURN_NONE;
    while (p < stop && p < end - HEADER_SIZE_UP_TO_MAGIC) {
        int32_t size = be_i32(buf + p + SIZE_OFFSET);
        int64_t nxt;
        int8_t magic;
        int ok;
        if (size < RECORD_OVERHEAD_V0)
            break;
        nxt = p + LOG_OVERHEAD + (int64_t)size;
        if (nxt > end)
            break;
        magic = (int8_t)buf[p + MAGIC_OFFSET];
        if (magic >= 2) {
            if (nxt - p < RECORD_BATCH_OVERHEAD) {
                ok = 0;
            } else {
                int64_t c = call_crc(crc32c_fn, buf, (Py_ssize_t)p + V2_ATTRIBUTES_OFFSET, (Py_ssize_t)nxt);
                if (c == -2) {
                    PyBuffer_Release(&view);
                    return NULL;
                }
                if (c < 0)
                    break;
                ok = be_u32(buf + p + V2_CRC_OFFSET) == (uint32_t)c;
                records += be_i32(buf + p + V2_RECORDS_COUNT_OFFSET);
            }
        } else {
            int64_t c = call_crc(crc32_fn, buf, (Py_ssize_t)p + MAGIC_OFFSET, (Py_ssize_t)nxt);
            if (c == -2) {
                PyBuffer_Release(&view);
                return NULL;
            }
            if (c < 0)
                break;
            ok = be_u32(buf + p + ENTRY_CRC_OFFSET) == (uint32_t)c;
            if (buf[p + ENTRY_ATTRIBUTES_OFFSET] & CODEC_MASK)
                unknown++;
            else
                records++;
        }
        batches++;
        if (!ok) {
            failed_at = p;
            p = nxt;
            break;
        }
        p = nxt;
    }
    PyBuffer_Release(&view);
    return result(R_VERIFY_WALK, Py_BuildValue("(LLLLL)", (long long)p, (long long)batches, (long long)records,
                                               (long long)unknown, (long long)failed_at));
}

/* headers_walk(win, lp, wl, headers) -> HeadersWalk(position, headers, size) | None
 * The size-only loop of ``recovery.fast._Walk._window``: from ``lp`` while ``lp < wl``, append the first
 * RECOVERY_HEADER bytes of each batch to the bytearray ``headers`` and step by its size; stops at a size below
 * RECORD_OVERHEAD_V0 (returned as ``size``). */
static PyObject *sp_headers_walk(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    int64_t lp, wl, s = RECORD_OVERHEAD_V0, lp0;
    Py_ssize_t n = 0, old;
    const uint8_t *w;
    PyObject *hdr;
    char *dst;
    (void)self;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "headers_walk takes 4 arguments");
        return NULL;
    }
    hdr = args[3];
    if (!PyByteArray_CheckExact(hdr) || arg_i64(args[1], &lp) || arg_i64(args[2], &wl))
        Py_RETURN_NONE;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    w = (const uint8_t *)view.buf;
    if (lp < 0 || wl > view.len - RECOVERY_HEADER) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    /* Count first, then copy into one resize of the bytearray. */
    lp0 = lp;
    while (lp < wl) {
        s = be_i32(w + lp + SIZE_OFFSET);
        if (s < RECORD_OVERHEAD_V0)
            break;
        n++;
        lp += s + LOG_OVERHEAD;
    }
    old = PyByteArray_GET_SIZE(hdr);
    if (PyByteArray_Resize(hdr, old + n * RECOVERY_HEADER) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    dst = PyByteArray_AS_STRING(hdr) + old;
    lp = lp0;
    for (Py_ssize_t i = 0; i < n; i++) {
        memcpy(dst, w + lp, RECOVERY_HEADER);
        dst += RECOVERY_HEADER;
        lp += (int64_t)be_i32(w + lp + SIZE_OFFSET) + LOG_OVERHEAD;
    }
    PyBuffer_Release(&view);
    return result(R_HEADERS_WALK, Py_BuildValue("(LnL)", (long long)lp, n, (long long)s));
}

/* The last offset and maximum timestamp LogSegment.recover reads from the header ``h`` of a batch of ``size`` bytes
 * (log overhead included) in a segment based at ``base``: 0, or -1 where recovery does something else with the
 * batch than index it (the Python rules then judge it): a magic other than 0, 1, 2, a v2 batch below its overhead,
 * a last offset that overflows int64 or falls outside [base, base + INT32_MAX]. */
static inline int recovery_fields(const uint8_t *h, int64_t size, int64_t base, int64_t *last, int64_t *ts)
{
    int64_t rel;
    switch ((int8_t)h[MAGIC_OFFSET]) {
    case 2:
        if (size < RECORD_BATCH_OVERHEAD
            || __builtin_add_overflow(be_i64(h), (int64_t)be_i32(h + V2_LAST_OFFSET_DELTA_OFFSET), last))
            return -1; /* numpy wraps the sum, then rejects it as out of range */
        *ts = be_i64(h + V2_MAX_TIMESTAMP_OFFSET);
        break;
    case 1:
        *last = be_i64(h);
        *ts = be_i64(h + ENTRY_TIMESTAMP_OFFSET);
        break;
    case 0:
        *last = be_i64(h);
        *ts = -1; /* NO_TIMESTAMP */
        break;
    default:
        return -1;
    }
    return __builtin_sub_overflow(*last, base, &rel) || rel < 0 || rel > INT32_MAX ? -1 : 0;
}

/* index_walk(data, pos0, base, interval, last_index_entry, max_ts, max_ts_offset, points)
 *     -> (batches, last_offset, max_ts, max_ts_offset, magics, last_index_entry) | None
 * ``recovery.fast.SegmentIndexer.feed``'s walk: the batches of ``data`` (whole ones, the segment's bytes from
 * position ``pos0``) under LogSegment.recover's rules: the running max timestamp and its offset, and an index
 * point wherever ``position - last_index_entry > interval``, appended to the bytearray ``points`` as four native
 * int64 (last offset, position, running max timestamp, its offset). ``magics``: bit m for each magic m seen;
 * ``last_index_entry``: the last point's position (as given without one).
 * Nothing is checked at the points (the caller applies the index appends' rules to them). None, with nothing
 * appended, for anything recovery would stop at (the Python walk then raises): a size below
 * RECORD_OVERHEAD_V0, a batch past the end of ``data``, a v2 batch below its overhead, a magic other than
 * 0, 1, 2, a last offset outside [base, base + INT32_MAX]. */
static PyObject *sp_index_walk(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    int64_t pos0, base, interval, lie, max_ts, max_off, last = -1, batches = 0;
    int64_t *pts = NULL, *grown;
    Py_ssize_t n_pts = 0, cap = 0, p = 0, n, old;
    const uint8_t *d;
    PyObject *out_pts;
    unsigned magics = 0;
    (void)self;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "index_walk takes 8 arguments");
        return NULL;
    }
    out_pts = args[7];
    if (!PyByteArray_CheckExact(out_pts) || arg_i64(args[1], &pos0) || arg_i64(args[2], &base)
        || arg_i64(args[3], &interval) || arg_i64(args[4], &lie) || arg_i64(args[5], &max_ts)
        || arg_i64(args[6], &max_off))
        Py_RETURN_NONE;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    d = (const uint8_t *)view.buf;
    n = view.len;
    while (p < n) {
        int32_t s;
        int64_t batch_last, ts, at, gap;
        if (n - p < HEADER_SIZE_UP_TO_MAGIC)
            goto unusual;
        s = be_i32(d + p + SIZE_OFFSET);
        if (s < RECORD_OVERHEAD_V0 || (int64_t)s + LOG_OVERHEAD > n - p)
            goto unusual;
        if (recovery_fields(d + p, (int64_t)s + LOG_OVERHEAD, base, &batch_last, &ts) < 0)
            goto unusual;
        magics |= 1u << d[p + MAGIC_OFFSET];
        if (ts > max_ts) {
            max_ts = ts;
            max_off = batch_last;
        }
        if (__builtin_add_overflow(pos0, (int64_t)p, &at) || __builtin_sub_overflow(at, lie, &gap))
            goto unusual;
        if (gap > interval) {
            if (n_pts == cap) {
                cap = cap ? cap * 2 : 64;
                grown = PyMem_Realloc(pts, (size_t)cap * 4 * sizeof(int64_t));
                if (grown == NULL)
                    goto unusual;
                pts = grown;
            }
            pts[4 * n_pts] = batch_last;
            pts[4 * n_pts + 1] = at;
            pts[4 * n_pts + 2] = max_ts;
            pts[4 * n_pts + 3] = max_off;
            n_pts++;
            lie = at;
        }
        last = batch_last;
        batches++;
        p += (Py_ssize_t)s + LOG_OVERHEAD;
    }
    PyBuffer_Release(&view);
    if (n_pts) {
        old = PyByteArray_GET_SIZE(out_pts);
        if (PyByteArray_Resize(out_pts, old + n_pts * 4 * (Py_ssize_t)sizeof(int64_t)) < 0) {
            PyErr_Clear();
            PyMem_Free(pts);
            Py_RETURN_NONE;
        }
        memcpy(PyByteArray_AS_STRING(out_pts) + old, pts, (size_t)n_pts * 4 * sizeof(int64_t));
    }
    PyMem_Free(pts);
    return Py_BuildValue("(LLLLIL)", (long long)batches, (long long)last, (long long)max_ts, (long long)max_off,
                         magics, (long long)lie);
unusual:
    PyBuffer_Release(&view);
    PyMem_Free(pts);
    Py_RETURN_NONE;
}

/* A growing array of int64 pairs (the entries one call appends), freed by the caller. */
typedef struct {
    int64_t *v;
    Py_ssize_t n, cap;  /* pairs */
} Pairs;

/* Room for ``cap`` pairs (a step's headers give at most one index and one time entry each): no regrowth, and no
 * copy of what was appended, in the loop. 0, or -1 (no exception left). */
static int pairs_reserve(Pairs *a, Py_ssize_t cap)
{
    if (cap <= a->cap)
        return 0;
    int64_t *grown = PyMem_Realloc(a->v, (size_t)cap * 2 * sizeof(int64_t));
    if (grown == NULL)
        return -1;
    a->v = grown;
    a->cap = cap;
    return 0;
}

static inline int pairs_put(Pairs *a, int64_t x, int64_t y)
{
    if (a->n == a->cap) {
        Py_ssize_t cap = a->cap ? a->cap * 2 : 256;
        int64_t *grown = PyMem_Realloc(a->v, (size_t)cap * 2 * sizeof(int64_t));
        if (grown == NULL)
            return -1;
        a->v = grown;
        a->cap = cap;
    }
    a->v[2 * a->n] = x;
    a->v[2 * a->n + 1] = y;
    a->n++;
    return 0;
}

/* Appends each of three pair arrays to its bytearray, all or none: every bytearray is resized first (one that
 * cannot grow, say while exported, leaves the others as they were). 0, or -1 (no exception left). */
static int pairs_flush(const Pairs *a, PyObject *out_a, const Pairs *b, PyObject *out_b, const Pairs *c,
                       PyObject *out_c)
{
    const Pairs *src[3] = {a, b, c};
    PyObject *dst[3] = {out_a, out_b, out_c};
    Py_ssize_t old[3];
    int i;
    for (i = 0; i < 3; i++) {
        old[i] = PyByteArray_GET_SIZE(dst[i]);
        if (src[i]->n && PyByteArray_Resize(dst[i], old[i] + src[i]->n * 2 * (Py_ssize_t)sizeof(int64_t)) < 0) {
            PyErr_Clear();
            while (i-- > 0)
                if (src[i]->n)
                    PyByteArray_Resize(dst[i], old[i]); /* shrinking back cannot fail */
            return -1;
        }
    }
    for (i = 0; i < 3; i++)
        if (src[i]->n)
            memcpy(PyByteArray_AS_STRING(dst[i]) + old[i], src[i]->v, (size_t)src[i]->n * 2 * sizeof(int64_t));
    return 0;
}

/* LogSegment.recover's state carried from batch to batch (recovery.fast._Builder's fields), with the entries
 * appended since the call began. */
typedef struct {
    int64_t base, interval, verify, lie, max_ts, max_off, t_ts, t_off, i_last, i_count, t_count, epoch, last;
    int has_last;
    unsigned magics;
    Pairs idx, tim, eps;
} Rules;

/* Reads the state from args[k..k+9] (last_index_entry, max_ts, max_ts_offset, time_last_ts, time_last_offset,
 * index_last or None, index_count, time_count, latest_epoch) after base, interval, verify at args[k-3..k-1]; -1
 * (no exception left) where one is not an int64. */
static int rules_parse(Rules *r, PyObject *const *args, int k)
{
    memset(r, 0, sizeof(*r));
    r->last = -1;
    r->has_last = args[k + 5] != Py_None;
    return arg_i64(args[k - 3], &r->base) || arg_i64(args[k - 2], &r->interval) || arg_i64(args[k - 1], &r->verify)
           || arg_i64(args[k], &r->lie) || arg_i64(args[k + 1], &r->max_ts) || arg_i64(args[k + 2], &r->max_off)
           || arg_i64(args[k + 3], &r->t_ts) || arg_i64(args[k + 4], &r->t_off)
           || (r->has_last && arg_i64(args[k + 5], &r->i_last)) || arg_i64(args[k + 6], &r->i_count)
           || arg_i64(args[k + 7], &r->t_count) || arg_i64(args[k + 8], &r->epoch) ? -1 : 0;
}

static void rules_free(Rules *r)
{
    PyMem_Free(r->idx.v);
    PyMem_Free(r->tim.v);
    PyMem_Free(r->eps.v);
}

/* The batch at ``pos`` (``size`` bytes, log overhead included) whose header ``h`` holds, under the rules: 0 with the
 * state advanced and *batch_last, *ts set; -1 with nothing changed where recover() does something else than
 * append for it (the numpy rules must judge it): a magic other than 0, 1, 2, a v2 batch below its overhead, a last
 * offset outside [base, base + INT32_MAX], an InvalidOffsetException of either index, with ``verify`` a v2 control
 * batch (its marker is read and checked), or an int64 overflow. Every check comes before any change. */
static inline int rules_batch(Rules *r, const uint8_t *h, int64_t pos, int64_t size, int64_t *batch_last,
                              int64_t *ts)
{
    int8_t magic = (int8_t)h[MAGIC_OFFSET];
    int64_t gap, end, max_ts = r->max_ts, max_off = r->max_off, e = -1;
    int point;
    if (size < RECORD_OVERHEAD_V0 + LOG_OVERHEAD || recovery_fields(h, size, r->base, batch_last, ts) < 0
        || __builtin_add_overflow(pos, size, &end) || __builtin_sub_overflow(pos, r->lie, &gap))
        return -1;
    if (magic == 2) {
        if (r->verify && (be_i16(h + V2_ATTRIBUTES_OFFSET) & 0x20))
            return -1; /* a control batch: its marker is read and checked */
        e = be_i32(h + V2_PARTITION_LEADER_EPOCH_OFFSET);
    }
    if (*ts > max_ts) {
        max_ts = *ts;
        max_off = *batch_last;
    }
    point = gap > r->interval;
    /* OffsetIndex.append: strictly increasing offsets; TimeIndex.maybeAppend: an offset below the last entry's
     * throws even where nothing is appended. */
    if (point && ((r->has_last && *batch_last <= r->i_last) || (r->t_count > 0 && max_off < r->t_off)))
        return -1;
    if (e >= 0 && e > r->epoch) {
        if (pairs_put(&r->eps, e, be_i64(h)) < 0)
            return -1; /* nothing else changed yet */
        r->epoch = e;
    }
    if (point && (pairs_put(&r->idx, *batch_last, pos) < 0
                  || (max_ts > r->t_ts && pairs_put(&r->tim, max_ts, max_off) < 0)))
        return -2; /* cannot happen (rules_reserve made room for every batch); the caller gives up the call */
    r->max_ts = max_ts;
    r->max_off = max_off;
    if (point) {
        r->has_last = 1;
        r->i_last = *batch_last;
        r->i_count++;
        r->lie = pos;
        if (max_ts > r->t_ts) {
            r->t_ts = max_ts;
            r->t_off = max_off;
            r->t_count++;
        }
    }
    r->magics |= 1u << magic;
    r->last = *batch_last;
    return 0;
}

/* Room for n more batches' index and time entries: rules_batch never grows them. 0, or -1 (no exception left). */
static int rules_reserve(Rules *r, Py_ssize_t n)
{
    return pairs_reserve(&r->idx, r->idx.n + n) < 0 || pairs_reserve(&r->tim, r->tim.n + n) < 0 ? -1 : 0;
}

/* A rules call's result struct ``which``: the fields of ``head`` (a new tuple, or NULL with an exception set), then
 * the state (RULES_STATE_FIELDS). */
static PyObject *rules_result(int which, PyObject *head, const Rules *r)
{
    PyObject *state, *all;
    if (head == NULL)
        return NULL;
    state = Py_BuildValue("(LLLLLNLLL)", (long long)r->lie, (long long)r->max_ts, (long long)r->max_off,
                          (long long)r->t_ts, (long long)r->t_off,
                          r->has_last ? PyLong_FromLongLong(r->i_last) : Py_NewRef(Py_None), (long long)r->i_count,
                          (long long)r->t_count, (long long)r->epoch);
    all = state == NULL ? NULL : PySequence_Concat(head, state);
    Py_DECREF(head);
    Py_XDECREF(state);
    return result(which, all);
}

/* The five BatchChunk arrays of ``arrays`` (None: no arrays), each of at least n items: 0 with *nbufs buffers
 * held (the caller releases them), or -1 (no exception left). */
static int chunk_arrays(PyObject *arrays, Py_ssize_t n, Py_buffer bufs[5], int *nbufs, int64_t **aq, int64_t **asz,
                        int8_t **amagic, int64_t **alast, int64_t **amts)
{
    static const Py_ssize_t item[5] = {8, 8, 1, 8, 8};
    if (arrays == Py_None)
        return 0;
    if (!PyTuple_Check(arrays) || PyTuple_GET_SIZE(arrays) != 5)
        return -1;
    for (; *nbufs < 5; (*nbufs)++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(arrays, *nbufs), &bufs[*nbufs], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS)
            < 0) {
            PyErr_Clear();
            return -1;
        }
        if (bufs[*nbufs].len < n * item[*nbufs]) {
            (*nbufs)++;
            return -1;
        }
    }
    *aq = bufs[0].buf;
    *asz = bufs[1].buf;
    *amagic = bufs[2].buf;
    *alast = bufs[3].buf;
    *amts = bufs[4].buf;
    return 0;
}

/* recover_rules(headers, pos0, base, interval, verify, last_index_entry, max_ts, max_ts_offset, time_last_ts,
 *               time_last_offset, index_last, index_count, time_count, latest_epoch, index_out, time_out,
 *               epochs_out, arrays) -> RecoverRules | None
 * ``recovery.fast._Builder.feed`` and ``feed_epochs`` with recover_fast's per-batch checks, for the batches whose
 * first RECOVERY_HEADER bytes ``headers`` holds (a whole number of them, the first at segment position ``pos0``,
 * each next one where the size field of the one before says): LogSegment.recover's rules batch by batch
 * (rules_batch). The running max timestamp and its offset; an index point wherever ``position - last_index_entry >
 * interval``, with OffsetIndex.append's entry (last offset, position) appended to the bytearray ``index_out`` and,
 * where TimeIndex.maybeAppend appends, its entry (timestamp, offset) to ``time_out`` (native int64 pairs); the
 * leader-epoch cache's new (epoch, base offset) pairs to ``epochs_out``. ``index_last`` is None before the first
 * offset index entry. ``arrays``: None, or the five contiguous arrays of a BatchChunk (positions, sizes, last
 * offsets and max timestamps int64, magic int8), each of at least as many items as there are headers, to fill.
 *
 * None, with nothing appended and the state unchanged (``arrays`` may be partly filled: the caller drops them),
 * where any batch needs the numpy rules (rules_batch). */
static PyObject *sp_recover_rules(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view, bufs[5];
    int nbufs = 0;
    int64_t pos, *aq = NULL, *asz = NULL, *alast = NULL, *amts = NULL;
    int8_t *amagic = NULL;
    Py_ssize_t n, i;
    const uint8_t *h;
    Rules r;
    PyObject *res = NULL;
    (void)self;
    if (nargs != 18) {
        PyErr_SetString(PyExc_TypeError, "recover_rules takes 18 arguments");
        return NULL;
    }
    if (arg_i64(args[1], &pos) || rules_parse(&r, args, 5) < 0 || !PyByteArray_CheckExact(args[14])
        || !PyByteArray_CheckExact(args[15]) || !PyByteArray_CheckExact(args[16]))
        Py_RETURN_NONE;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    h = (const uint8_t *)view.buf;
    n = view.len / RECOVERY_HEADER;
    if (view.len % RECOVERY_HEADER || chunk_arrays(args[17], n, bufs, &nbufs, &aq, &asz, &amagic, &alast, &amts) < 0
        || rules_reserve(&r, n) < 0)
        goto unusual;
    for (i = 0; i < n; i++, h += RECOVERY_HEADER) {
        int64_t size = (int64_t)be_i32(h + SIZE_OFFSET) + LOG_OVERHEAD, batch_last, ts;
        if (rules_batch(&r, h, pos, size, &batch_last, &ts) < 0)
            goto unusual;
        if (aq != NULL) {
            aq[i] = pos;
            asz[i] = size;
            amagic[i] = (int8_t)h[MAGIC_OFFSET];
            alast[i] = batch_last;
            amts[i] = ts;
        }
        pos += size; /* rules_batch checked it does not overflow */
    }
    if (pairs_flush(&r.idx, args[14], &r.tim, args[15], &r.eps, args[16]) < 0)
        goto unusual;
    res = rules_result(R_RECOVER_RULES, Py_BuildValue("(nLLI)", n, (long long)pos, (long long)r.last, r.magics), &r);
    goto done;
unusual:
    res = Py_NewRef(Py_None);
done:
    while (nbufs > 0)
        PyBuffer_Release(&bufs[--nbufs]);
    PyBuffer_Release(&view);
    rules_free(&r);
    return res;
}

/* hop_rules(fd, p, limit, size, max_n, probe_n, probe_below, base, interval, verify, last_index_entry, max_ts,
 *           max_ts_offset, time_last_ts, time_last_offset, index_last, index_count, time_count, latest_epoch,
 *           index_out, time_out, epochs_out, arrays) -> HopRules | None
 * hop_walk and recover_rules in one loop: one RECOVERY_HEADER-byte pread per batch from ``p`` while ``p < limit``,
 * each batch taken under the rules (rules_batch) as soon as its header is read, the entries appended as
 * recover_rules appends them and ``arrays`` filled from index 0. Every batch taken is committed; the walk stops
 * before any batch it leaves to Python (``why`` 3: a size below RECORD_OVERHEAD_V0, a batch running past ``size``
 * or a header read short, a failed read, rules numpy must apply), after ``max_n`` batches (0), at the limit (1), or
 * with ``probe_n`` > 0 after the first ``probe_n`` batches when they average below ``probe_below`` bytes (2).
 * None, with nothing appended, where an argument is not what it should be or an output cannot grow. */
static PyObject *sp_hop_rules(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer bufs[5];
    int nbufs = 0, why = 0;
    int64_t fd, p, limit, size, max_n, probe_n, probe_below, start, *aq = NULL, *asz = NULL, *alast = NULL,
        *amts = NULL;
    int8_t *amagic = NULL;
    Py_ssize_t n = 0;
    uint8_t h[RECOVERY_HEADER];
    Rules r;
    PyObject *res = NULL;
    (void)self;
    if (nargs != 23) {
        PyErr_SetString(PyExc_TypeError, "hop_rules takes 23 arguments");
        return NULL;
    }
    if (arg_i64(args[0], &fd) || arg_i64(args[1], &p) || arg_i64(args[2], &limit) || arg_i64(args[3], &size)
        || arg_i64(args[4], &max_n) || arg_i64(args[5], &probe_n) || arg_i64(args[6], &probe_below)
        || fd < 0 || fd > INT32_MAX || p < 0 || max_n <= 0 || max_n > (1 << 20) || probe_n < 0 || probe_below < 0
        || probe_below > INT32_MAX || rules_parse(&r, args, 10) < 0 || !PyByteArray_CheckExact(args[19])
        || !PyByteArray_CheckExact(args[20]) || !PyByteArray_CheckExact(args[21]))
        Py_RETURN_NONE;
    if (chunk_arrays(args[22], max_n, bufs, &nbufs, &aq, &asz, &amagic, &alast, &amts) < 0
        || rules_reserve(&r, max_n) < 0)
        goto none;
    start = p;
    for (;;) {
        int64_t s, batch_last, ts, end;
        ssize_t got;
        int k;
        if (n == max_n) {
            why = 0;
            break;
        }
        if (p >= limit) {
            why = 1;
            break;
        }
        if (n == probe_n && n > 0 && p - start < probe_n * probe_below) {
            why = 2;
            break;
        }
        got = pread((int)fd, h, RECOVERY_HEADER, (off_t)p);
        why = 3;
        if (got < RECOVERY_HEADER)
            break; /* a failed read, or the file's last bytes: the Python walk reads them */
        s = (int64_t)be_i32(h + SIZE_OFFSET) + LOG_OVERHEAD;
        if (s < RECORD_OVERHEAD_V0 + LOG_OVERHEAD || __builtin_add_overflow(p, s, &end) || end > size)
            break; /* a corrupt size, or a torn tail: the Python walk ends there */
        k = rules_batch(&r, h, p, s, &batch_last, &ts);
        if (k == -2)
            goto none;
        if (k < 0)
            break; /* the numpy rules judge it, and the rest */
        if (aq != NULL) {
            aq[n] = p;
            asz[n] = s;
            amagic[n] = (int8_t)h[MAGIC_OFFSET];
            alast[n] = batch_last;
            amts[n] = ts;
        }
        n++;
        p = end;
    }
    if (pairs_flush(&r.idx, args[19], &r.tim, args[20], &r.eps, args[21]) < 0)
        goto none;
    res = rules_result(R_HOP_RULES, Py_BuildValue("(nLiLI)", n, (long long)p, why, (long long)r.last, r.magics), &r);
    goto done;
none:
    res = Py_NewRef(Py_None);
done:
    while (nbufs > 0)
        PyBuffer_Release(&bufs[--nbufs]);
    rules_free(&r);
    return res;
}

/* Releases the first ``n`` views of ``b`` (an empty view, for an optional array given as None, holds nothing). */
static void release_arrays(Py_buffer *b, int n)
{
    while (n > 0) {
        n--;
        if (b[n].obj != NULL)
            PyBuffer_Release(&b[n]);
    }
}

/* The views of the arrays ``args[0:n]``, C-contiguous, writable from ``writable_from`` on; ``args[optional]`` may be
 * None (its view left empty). 0, or -1 with none held and no exception left. */
static int get_arrays(PyObject *const *args, int n, int writable_from, int optional, Py_buffer *b)
{
    for (int s = 0; s < n; s++) {
        if (s == optional && args[s] == Py_None) {
            b[s].buf = NULL;
            b[s].len = 0;
            b[s].obj = NULL;
            continue;
        }
        if (PyObject_GetBuffer(args[s], &b[s], (s >= writable_from ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS) < 0) {
            PyErr_Clear();
            release_arrays(b, s);
            return -1;
        }
    }
    return 0;
}

/* answer_positions(positions, sizes, last_offsets, sorted, order, is_start, batch_last, prior_max, carry) -> carry
 * ``reindex.verify.OffsetEntriesCheck.feed`` for one chunk: for each query position of ``sorted`` (ascending)
 * that falls inside the chunk's batches, at index ``order[k]`` (``order`` None: k) of the answer arrays: whether
 * it is the start of the batch holding it, that batch's last offset, and the largest last offset of the batches
 * before it (``carry``: of the chunks before). Returns the new carry, or None (nothing written) where the
 * arguments are not what it takes; ValueError for an ``order`` index out of range. */
static PyObject *sp_answer_positions(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer b[8];
    int has_order;
    int64_t carry, pm, chunk_max, end;
    Py_ssize_t n, m, k, j;
    const int64_t *q, *sz, *last, *sorted, *order;
    uint8_t *is_start;
    int64_t *blast, *prior;
    PyObject *res = NULL;
    (void)self;
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "answer_positions takes 9 arguments");
        return NULL;
    }
    if (arg_i64(args[8], &carry))
        Py_RETURN_NONE;
    has_order = args[4] != Py_None;
    if (get_arrays(args, 8, 5, 4, b) < 0)
        Py_RETURN_NONE;
    n = b[0].len / 8;
    m = b[3].len / 8;
    if (n == 0 || b[1].len != n * 8 || b[2].len != n * 8 || b[0].len != n * 8 || (has_order && b[4].len != m * 8)
        || b[5].len != m || b[6].len != m * 8 || b[7].len != m * 8)
        goto fail;
    q = b[0].buf;
    sz = b[1].buf;
    last = b[2].buf;
    sorted = b[3].buf;
    order = b[4].buf;
    is_start = b[5].buf;
    blast = b[6].buf;
    prior = b[7].buf;
    chunk_max = last[0];
    for (j = 1; j < n; j++)
        if (last[j] > chunk_max)
            chunk_max = last[j];
    /* the first query at or after the chunk's start */
    {
        Py_ssize_t lo = 0, hi = m;
        while (lo < hi) {
            Py_ssize_t mid = lo + (hi - lo) / 2;
            if (sorted[mid] < q[0])
                lo = mid + 1;
            else
                hi = mid;
        }
        k = lo;
    }
    j = 0;
    pm = carry;
    if (__builtin_add_overflow(q[n - 1], sz[n - 1], &end))
        goto fail;
    for (; k < m && sorted[k] < end; k++) {
        int64_t x = sorted[k], at;
        while (j + 1 < n && q[j + 1] <= x) {
            if (last[j] > pm)
                pm = last[j];
            j++;
        }
        at = has_order ? order[k] : k;
        if (at < 0 || at >= m) {
            PyErr_SetString(PyExc_ValueError, "answer_positions: order is not a permutation of the queries");
            goto done;
        }
        is_start[at] = q[j] == x;
        blast[at] = last[j];
        prior[at] = pm;
    }
    res = PyLong_FromLongLong(chunk_max > carry ? chunk_max : carry);
    goto done;
fail:
    res = Py_NewRef(Py_None);
done:
    release_arrays(b, 8);
    return res;
}

/* answer_times(last_offsets, max_timestamps, sorted, order, found, batch_last, prior_max_ts, carry_last, carry_ts,
 *              done) -> (carry_last, carry_ts, done) | None
 * ``reindex.verify.TimeEntriesCheck.feed`` for one chunk: for each query offset of ``sorted`` (ascending) from
 * index ``done`` on that the chunk's batches reach (the running max of their last offsets, ``carry_last`` that of
 * the chunks before), at index ``order[k]`` (``order`` None: k) of the answer arrays: found, the last offset of the
 * first batch reaching it, and the largest max timestamp of the batches before that one (``carry_ts``: of the
 * chunks before). None (nothing written) where the arguments are not what it takes; ValueError for an ``order``
 * index out of range. */
static PyObject *sp_answer_times(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer b[7];
    int has_order;
    int64_t carry_last, carry_ts, done, reach, tm, max_last, max_ts;
    Py_ssize_t n, m, k, j;
    const int64_t *last, *mts, *sorted, *order;
    uint8_t *found;
    int64_t *blast, *prior;
    PyObject *res = NULL;
    (void)self;
    if (nargs != 10) {
        PyErr_SetString(PyExc_TypeError, "answer_times takes 10 arguments");
        return NULL;
    }
    if (arg_i64(args[7], &carry_last) || arg_i64(args[8], &carry_ts) || arg_i64(args[9], &done))
        Py_RETURN_NONE;
    has_order = args[3] != Py_None;
    if (get_arrays(args, 7, 4, 3, b) < 0)
        Py_RETURN_NONE;
    n = b[0].len / 8;
    m = b[2].len / 8;
    if (n == 0 || b[0].len != n * 8 || b[1].len != n * 8 || b[2].len != m * 8 || (has_order && b[3].len != m * 8)
        || b[4].len != m || b[5].len != m * 8 || b[6].len != m * 8 || done < 0 || done > m)
        goto fail;
    last = b[0].buf;
    mts = b[1].buf;
    sorted = b[2].buf;
    order = b[3].buf;
    found = b[4].buf;
    blast = b[5].buf;
    prior = b[6].buf;
    max_last = carry_last;
    max_ts = carry_ts;
    for (j = 0; j < n; j++) {
        if (last[j] > max_last)
            max_last = last[j];
        if (mts[j] > max_ts)
            max_ts = mts[j];
    }
    j = 0;
    reach = last[0] > carry_last ? last[0] : carry_last;
    tm = carry_ts;
    for (k = (Py_ssize_t)done; k < m; k++) {
        int64_t o = sorted[k], at;
        while (reach < o) {
            if (++j == n)
                goto out;
            if (mts[j - 1] > tm)
                tm = mts[j - 1];
            if (last[j] > reach)
                reach = last[j];
        }
        at = has_order ? order[k] : k;
        if (at < 0 || at >= m) {
            PyErr_SetString(PyExc_ValueError, "answer_times: order is not a permutation of the queries");
            goto done;
        }
        found[at] = 1;
        blast[at] = last[j];
        prior[at] = tm;
    }
out:
    res = Py_BuildValue("(LLn)", (long long)max_last, (long long)max_ts, k);
    goto done;
fail:
    res = Py_NewRef(Py_None);
done:
    release_arrays(b, 7);
    return res;
}

/* Append the n headers of buf to the bytearray hdr; -1 (error cleared) when it cannot grow. */
static int hop_flush(PyObject *hdr, const uint8_t *buf, Py_ssize_t n)
{
    Py_ssize_t old = PyByteArray_GET_SIZE(hdr);
    if (n == 0)
        return 0;
    if (PyByteArray_Resize(hdr, old + n * RECOVERY_HEADER) < 0) {
        PyErr_Clear();
        return -1;
    }
    memcpy(PyByteArray_AS_STRING(hdr) + old, buf, (size_t)n * RECOVERY_HEADER);
    return 0;
}

#define HOP_BLOCK 256 /* headers read into the stack buffer between appends (11 KB) */

/* hop_walk(fd, p, limit, max_n, headers[, probe_n, probe_below]) -> HeadersWalk(position, headers, size) | None
 * The hopping loop of ``recovery.fast._Walk._hops``: one RECOVERY_HEADER-byte pread per batch (headers read
 * short at the end of the file are padded with zeros) while ``p < limit`` and fewer than ``max_n`` batches were
 * read, appending each header to the bytearray ``headers``. Stops at a size below RECORD_OVERHEAD_V0 (returned as
 * ``size``, ``position`` at that batch) and wherever a pread fails or is interrupted (``position`` at the batch:
 * the Python loop reads it again and raises what os.pread raises). The bytes between headers are never read.
 * With ``probe_n`` > 0: also stops after the first ``probe_n`` headers when they average below ``probe_below``
 * bytes a batch (the caller then reads windows: small batches are cheaper to copy than to hop). */
static PyObject *sp_hop_walk(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t fd, p, limit, max_n, s = RECORD_OVERHEAD_V0, probe_n = 0, probe_below = 0, start, next;
    Py_ssize_t n = 0, k = 0, old;
    PyObject *hdr;
    /* Headers go through a small buffer on the stack, appended block by block: no allocation of max_n headers
       per call (above glibc's mmap threshold, a fresh mapping and its page faults at every step). */
    uint8_t buf[HOP_BLOCK * RECOVERY_HEADER];
    (void)self;
    if (nargs != 5 && nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "hop_walk takes 5 or 7 arguments");
        return NULL;
    }
    hdr = args[4];
    if (!PyByteArray_CheckExact(hdr) || arg_i64(args[0], &fd) || arg_i64(args[1], &p) || arg_i64(args[2], &limit)
        || arg_i64(args[3], &max_n) || fd < 0 || fd > INT32_MAX || max_n <= 0 || max_n > (1 << 20) || p < 0
        || (nargs == 7 && (arg_i64(args[5], &probe_n) || arg_i64(args[6], &probe_below) || probe_n < 0
                           || probe_below < 0 || probe_below > INT32_MAX)))
        Py_RETURN_NONE;
    old = PyByteArray_GET_SIZE(hdr);
    start = p;
    while (p < limit && n < max_n) {
        /* The probe: after probe_n headers averaging below probe_below bytes, the caller reads windows instead. */
        if (n == probe_n && n > 0 && p - start < probe_n * probe_below)
            break;
        uint8_t *h = buf + k * RECOVERY_HEADER;
        ssize_t got = pread((int)fd, h, RECOVERY_HEADER, (off_t)p);
        if (got < 0)
            break;
        if (got < RECOVERY_HEADER)
            memset(h + got, 0, (size_t)(RECOVERY_HEADER - got));
        s = be_i32(h + SIZE_OFFSET);
        if (s < RECORD_OVERHEAD_V0 || __builtin_add_overflow(p, s + LOG_OVERHEAD, &next))
            break; /* (past INT64_MAX: only a file that is no regular file could say so; the Python loop raises) */
        n++;
        p = next;
        if (++k == HOP_BLOCK) {
            if (hop_flush(hdr, buf, k) < 0)
                goto fail;
            k = 0;
        }
    }
    if (hop_flush(hdr, buf, k) < 0)
        goto fail;
    return result(R_HEADERS_WALK, Py_BuildValue("(LnL)", (long long)p, n, (long long)s));
fail:
    /* all or nothing, as before: the caller walks these headers again in Python */
    if (PyByteArray_GET_SIZE(hdr) != old && PyByteArray_Resize(hdr, old) < 0)
        PyErr_Clear();
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------ scan figures */

/* Kafka's murmur2 (Utils.murmur2) with the given seed, in uint32 arithmetic as Java's int wraps. */
static uint32_t murmur2(const uint8_t *d, Py_ssize_t n, uint32_t seed)
{
    const uint32_t m = 0x5bd1e995U;
    uint32_t h = seed ^ (uint32_t)n;
    Py_ssize_t n4 = n / 4, i;
    for (i = 0; i < n4; i++) {
        uint32_t k = (uint32_t)d[4 * i] | ((uint32_t)d[4 * i + 1] << 8) | ((uint32_t)d[4 * i + 2] << 16)
                     | ((uint32_t)d[4 * i + 3] << 24);
        k *= m;
        k ^= k >> 24;
        k *= m;
        h *= m;
        h ^= k;
    }
    switch (n & 3) {
    case 3:
        h ^= (uint32_t)d[(n & ~(Py_ssize_t)3) + 2] << 16;
        /* fall through */
    case 2:
        h ^= (uint32_t)d[(n & ~(Py_ssize_t)3) + 1] << 8;
        /* fall through */
    case 1:
        h ^= (uint32_t)d[n & ~(Py_ssize_t)3];
        h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return h;
}

/* What scan.stats.BatchStats adds up over the batches a dump_walk takes (all v2, deep, CRC-valid, not control):
 * the state it was given, updated. */
typedef struct {
    uint8_t *registers; /* the HyperLogLog's HLL_M registers (sketches.HyperLogLog.add_hashes) */
    int64_t max_message_bytes;
    int64_t formats[5][4];
    int64_t largest, largest_pos, oversized, transactional, null_keys;
    int64_t ff_pos, ff_off, last_followed; /* ff_pos -1: no record followed yet */
    int has_ts;
    int64_t min_ts, max_ts, first_ts, last_ts, prev_ts, out_of_order; /* prev_ts -1: none before */
    int have_first;
    int64_t first_offset;
} ScanAcc;

/* A key into the distinct-key HyperLogLog's HLL_M ``registers``: its 64-bit hash (murmur2 with both seeds, as
 * ``keyshare.hash64_many``), register = top HLL_P bits, rank = leading zeros + 1 of the rest
 * (``HyperLogLog.add_hashes``). */
static inline void hll_add(uint8_t *registers, const uint8_t *k, Py_ssize_t n)
{
    uint64_t h = ((uint64_t)murmur2(k, n, KAFKA_SEED) << 32) | murmur2(k, n, SECOND_SEED);
    uint64_t rest = h & ((UINT64_C(1) << (64 - HLL_P)) - 1);
    uint8_t rank = (uint8_t)((64 - HLL_P) - (rest ? 64 - __builtin_clzll(rest) : 0) + 1);
    uint8_t *reg = registers + (size_t)(h >> (64 - HLL_P));
    if (*reg < rank)
        *reg = rank;
}

/* A record timestamp into the accumulator's figures (only those >= 0 count, as ``BatchStats`` counts them). */
static inline void acc_timestamp(ScanAcc *acc, int64_t ts)
{
    if (ts < 0)
        return;
    if (!acc->has_ts) {
        acc->has_ts = 1;
        acc->min_ts = acc->max_ts = acc->first_ts = ts;
    } else {
        if (ts < acc->min_ts)
            acc->min_ts = ts;
        if (ts > acc->max_ts)
            acc->max_ts = ts;
    }
    if (acc->prev_ts >= 0 && ts < acc->prev_ts)
        acc->out_of_order++;
    acc->prev_ts = acc->last_ts = ts;
}

/* The figures of a batch's ``count`` records in ``d[p:end]``, which v2_records_walk has just validated: timestamps,
 * keys (null, or hashed into the registers) and the records' size (the uncompressed size of a compressed batch).
 * Every read is checked again all the same (an uncompressed area is the segment's mapping, which another process
 * could change between the passes): -1 when anything is off, and the caller leaves the batch to Python. The
 * registers only ever take a maximum, so keys hashed before such a stop change nothing the Python walk would not. */
static int scan_records(const uint8_t *d, Py_ssize_t p, Py_ssize_t end, int64_t count, const V2Args *a,
                        ScanAcc *acc, int64_t *sizes)
{
    int64_t i, total = 0;
    for (i = 0; i < count; i++) {
        Py_ssize_t start = p, rec_end;
        int64_t length, ts_delta, od, kn, ts;
        if (read_varint(d, &p, end, 5, &length) < 0 || length < 0 || length > end - p)
            return -1;
        rec_end = p + (Py_ssize_t)length;
        p += 1;
        if (read_varint(d, &p, rec_end, 10, &ts_delta) < 0 || read_varint(d, &p, rec_end, 5, &od) < 0
            || read_varint(d, &p, rec_end, 5, &kn) < 0 || kn > rec_end - p)
            return -1;
        if (kn < 0)
            acc->null_keys++;
        else
            hll_add(acc->registers, d + p, (Py_ssize_t)kn);
        if (a->has_lat)
            ts = a->log_append_time;
        else if (__builtin_add_overflow(a->base_timestamp, ts_delta, &ts))
            return -1;
        acc_timestamp(acc, ts);
        total += rec_end - start;
        p = rec_end;
    }
    *sizes = total;
    return 0;
}

/* The ScanFigures of an accumulator (a new reference, NULL with the error set). */
static PyObject *scan_figures(const ScanAcc *sc)
{
    PyObject *formats, *ff, *lf, *tss, *first;
    formats = Py_BuildValue("((LLLL)(LLLL)(LLLL)(LLLL)(LLLL))",
                            (long long)sc->formats[0][0], (long long)sc->formats[0][1], (long long)sc->formats[0][2],
                            (long long)sc->formats[0][3], (long long)sc->formats[1][0], (long long)sc->formats[1][1],
                            (long long)sc->formats[1][2], (long long)sc->formats[1][3], (long long)sc->formats[2][0],
                            (long long)sc->formats[2][1], (long long)sc->formats[2][2], (long long)sc->formats[2][3],
                            (long long)sc->formats[3][0], (long long)sc->formats[3][1], (long long)sc->formats[3][2],
                            (long long)sc->formats[3][3], (long long)sc->formats[4][0], (long long)sc->formats[4][1],
                            (long long)sc->formats[4][2], (long long)sc->formats[4][3]);
    ff = sc->ff_pos >= 0 ? Py_BuildValue("(LL)", (long long)sc->ff_pos, (long long)sc->ff_off) : Py_NewRef(Py_None);
    lf = sc->ff_pos >= 0 ? PyLong_FromLongLong(sc->last_followed) : Py_NewRef(Py_None);
    tss = sc->has_ts ? Py_BuildValue("(LLLLL)", (long long)sc->min_ts, (long long)sc->max_ts, (long long)sc->first_ts,
                                     (long long)sc->last_ts, (long long)sc->out_of_order)
                     : Py_NewRef(Py_None);
    first = sc->have_first ? PyLong_FromLongLong(sc->first_offset) : Py_NewRef(Py_None);
    if (formats == NULL || ff == NULL || lf == NULL || tss == NULL || first == NULL) {
        Py_XDECREF(formats);
        Py_XDECREF(ff);
        Py_XDECREF(lf);
        Py_XDECREF(tss);
        Py_XDECREF(first);
        return NULL;
    }
    return result(R_SCAN_FIGURES, Py_BuildValue("(NLLLLLNNNN)", formats, (long long)sc->largest,
                                                (long long)sc->largest_pos, (long long)sc->oversized,
                                                (long long)sc->transactional, (long long)sc->null_keys, ff, lf, tss,
                                                first));
}

/* record_stats(records, registers, prev_ts, compressed, control) -> (uncompressed, null_keys, timestamps) | None
 *
 * ``scan.stats.BatchStats._records`` without key sharing, for a list of decoded records (``Record`` tuples) of
 * one batch or chunk: their sizes summed (``compressed``: the batch's uncompressed size), their timestamps >= 0
 * as ``(min, max, first, last, out of order)`` or None (``prev_ts``: the last one before them, -1 for none), and,
 * unless ``control``, their keys: null ones counted, the others hashed into the HyperLogLog ``registers`` (4096
 * writable bytes) as ``hash64_many`` and ``HyperLogLog.add_hashes`` would. None wherever the Python code must run
 * (a key that is not bytes, a timestamp past int64): the registers only ever take a maximum, so keys hashed
 * before that change nothing the Python code would not. */
static PyObject *sp_record_stats(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer regs;
    PyObject *recs;
    ScanAcc acc;
    int64_t unc = 0;
    int compressed, control;
    Py_ssize_t i, n;
    (void)self;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "record_stats takes 5 arguments");
        return NULL;
    }
    memset(&acc, 0, sizeof(acc));
    recs = args[0];
    if (!PyList_Check(recs) || arg_i64(args[2], &acc.prev_ts))
        Py_RETURN_NONE;
    compressed = PyObject_IsTrue(args[3]);
    control = PyObject_IsTrue(args[4]);
    if (compressed < 0 || control < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (PyObject_GetBuffer(args[1], &regs, PyBUF_WRITABLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (regs.len != HLL_M)
        goto decline;
    acc.registers = (uint8_t *)regs.buf;
    n = PyList_GET_SIZE(recs);
    for (i = 0; i < n; i++) {
        PyObject *r = PyList_GET_ITEM(recs, i), *key;
        long long ts, size;
        int overflow;
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) < 7)
            goto decline;
        ts = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(r, 1), &overflow);
        if (overflow || (ts == -1 && PyErr_Occurred()))
            goto decline;
        size = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(r, 6), &overflow);
        if (overflow || (size == -1 && PyErr_Occurred()))
            goto decline;
        unc += size;
        acc_timestamp(&acc, ts);
        if (control)
            continue;
        key = PyTuple_GET_ITEM(r, 2);
        if (key == Py_None)
            acc.null_keys++;
        else if (PyBytes_CheckExact(key))
            hll_add(acc.registers, (const uint8_t *)PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key));
        else
            goto decline;
    }
    PyBuffer_Release(&regs);
    if (!acc.has_ts)
        return Py_BuildValue("(LLO)", (long long)(compressed ? unc : 0), (long long)acc.null_keys, Py_None);
    return Py_BuildValue("(LL(LLLLL))", (long long)(compressed ? unc : 0), (long long)acc.null_keys,
                         (long long)acc.min_ts, (long long)acc.max_ts, (long long)acc.first_ts, (long long)acc.last_ts,
                         (long long)acc.out_of_order);
decline:
    PyErr_Clear();
    PyBuffer_Release(&regs);
    Py_RETURN_NONE;
}

/* dump_walk(buf, p, stop, end, last, flags, crc32c, crc32, decompress[, scan])
 * -> DumpWalk(position, batches, records, unknown_counts, nbytes, last_offset, first_offset, max_last_offset,
 *             max_timestamp, codecs, magics) | (DumpWalk, ScanFigures) | None
 *
 * The per-batch body of ``dump.DumpEngine._walk`` for batches that need nothing from Python: no
 * filter, no output, a valid CRC, offsets following on from ``last``, and (``flags & 1``, deep) records
 * that decode with consecutive offsets. It walks from ``p`` while batches start before ``stop`` and
 * stops before the first batch that needs more (a finding, a legacy batch when deep, a legacy
 * compressed wrapper when ``flags & 2``, anything unusual), which the Python loop then handles.
 *
 * ``scan`` (deep only) is ``scan.stats.BatchStats.fast_state()``: (the HyperLogLog's registers, writable;
 * max.message.bytes; the largest batch so far; the last record timestamp so far or -1). The walk then also adds up
 * what ``BatchStats.batch`` would for each batch it takes, and returns those figures beside the walk's. */
static PyObject *sp_dump_walk(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    int64_t p, stop, end, last, flags;
    int64_t batches = 0, records = 0, unknown = 0, nbytes = 0;
    int64_t first_base = 0, max_last = 0, max_ts = 0;
    int have = 0, deep, stop_legacy_compressed;
    int64_t codecs[8] = {0}, magics[3] = {0};
    PyObject *crc32c_fn, *crc32_fn, *decompress_fn, *walk, *figs;
    const uint8_t *buf;
    Py_buffer regs;
    ScanAcc acc, *sc = NULL;
    (void)self;
    if (nargs != 9 && nargs != 10) {
        PyErr_SetString(PyExc_TypeError, "dump_walk takes 9 or 10 arguments");
        return NULL;
    }
    if (arg_i64(args[1], &p) || arg_i64(args[2], &stop) || arg_i64(args[3], &end) || arg_i64(args[4], &last)
        || arg_i64(args[5], &flags))
        Py_RETURN_NONE;
    deep = (flags & 1) != 0;
    stop_legacy_compressed = (flags & 2) != 0;
    crc32c_fn = args[6];
    crc32_fn = args[7];
    decompress_fn = args[8];
    if (nargs == 10) {
        PyObject *t = args[9];
        if (!deep || !PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 4)
            Py_RETURN_NONE;
        memset(&acc, 0, sizeof(acc));
        if (arg_i64(PyTuple_GET_ITEM(t, 1), &acc.max_message_bytes) || arg_i64(PyTuple_GET_ITEM(t, 2), &acc.largest)
            || arg_i64(PyTuple_GET_ITEM(t, 3), &acc.prev_ts))
            Py_RETURN_NONE;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(t, 0), &regs, PyBUF_WRITABLE) < 0) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        if (regs.len != HLL_M) {
            PyBuffer_Release(&regs);
            Py_RETURN_NONE;
        }
        acc.registers = (uint8_t *)regs.buf;
        acc.largest_pos = acc.ff_pos = -1;
        sc = &acc;
    }
    buf = walk_buffer(args[0], p, end, &view);
    if (buf == NULL) {
        if (sc != NULL)
            PyBuffer_Release(&regs);
        Py_RETURN_NONE;
    }
    while (p < stop && p < end - HEADER_SIZE_UP_TO_MAGIC) {
        int32_t size = be_i32(buf + p + SIZE_OFFSET);
        int64_t nxt, first, last_off, ts, n_rec;
        int8_t magic;
        int codec;
        if (size < RECORD_OVERHEAD_V0 || p > end - LOG_OVERHEAD - (int64_t)size)
            break;
        nxt = p + LOG_OVERHEAD + (int64_t)size;
        magic = (int8_t)buf[p + MAGIC_OFFSET];
        if (magic == 2) {
            int64_t base = be_i64(buf + p);
            int32_t count;
            int16_t attr;
            int64_t c;
            if (size + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD)
                break;
            attr = be_i16(buf + p + V2_ATTRIBUTES_OFFSET);
            codec = attr & CODEC_MASK;
            if (__builtin_add_overflow(base, (int64_t)be_i32(buf + p + V2_LAST_OFFSET_DELTA_OFFSET), &last_off))
                break;
            /* record/validate.py's offset problems (a negative lastOffsetDelta, no next offset) and, deep, its
             * control record checks: findings the Python loop makes */
            if (last_off < base || last_off == INT64_MAX || (deep && (attr & 0x20)))
                break;
            ts = be_i64(buf + p + V2_MAX_TIMESTAMP_OFFSET);
            count = be_i32(buf + p + V2_RECORDS_COUNT_OFFSET);
            c = call_crc(crc32c_fn, buf, (Py_ssize_t)p + V2_ATTRIBUTES_OFFSET, (Py_ssize_t)nxt);
            if (c == -2)
                goto fatal;
            if (c < 0 || (uint32_t)c != be_u32(buf + p + V2_CRC_OFFSET))
                break;
            first = base;
            if (deep) {
                V2Args a;
                int rc, taken;
                PyObject *data = NULL;
                Py_buffer dv;
                const uint8_t *rd = buf;
                Py_ssize_t rp = (Py_ssize_t)p + RECORD_BATCH_OVERHEAD, rend = (Py_ssize_t)nxt;
                if (count < 0 || codec > 4)
                    break;
                a.base_offset = base;
                a.has_lat = (attr & 0x08) != 0; /* LogAppendTime: every record's time is the batch's max */
                a.base_timestamp = be_i64(buf + p + V2_BASE_TIMESTAMP_OFFSET);
                a.log_append_time = ts;
                a.base_sequence = -1;
                a.first_offset = a.last_offset = 0;
                if (codec != 0) {
                    int fat;
                    data = call_decompress(decompress_fn, codec, buf, rp, rend, &dv, &fat);
                    if (data == NULL) {
                        if (fat)
                            goto fatal;
                        break;
                    }
                    rd = (const uint8_t *)dv.buf;
                    rp = 0;
                    rend = dv.len;
                }
                rc = v2_records_walk(rd, rp, rend, count, &a, NULL, NULL);
                taken = rc == 0 && (count == 0 || (a.contiguous && (last == -1 || a.first_offset == last + 1)
                                                   && a.first_offset >= base && a.last_offset <= last_off));
                if (taken && sc != NULL) {
                    /* the batch's figures on a copy, kept only when every record reads back */
                    ScanAcc t = *sc;
                    int64_t sizes = 0, *f = t.formats[codec];
                    if (count > 0) {
                        if (t.ff_pos < 0) {
                            t.ff_pos = p;
                            t.ff_off = a.first_offset;
                        }
                        t.last_followed = a.last_offset;
                    }
                    if (scan_records(rd, rp, rend, count, &a, &t, &sizes) < 0) {
                        taken = 0;
                    } else {
                        f[0]++;
                        f[1] += count;
                        f[2] += nxt - p;
                        /* BatchStats.batch: a compressed batch's header and records; an empty one, its size */
                        f[3] += codec && count > 0 ? RECORD_BATCH_OVERHEAD + sizes : nxt - p;
                        if (nxt - p > t.largest) {
                            t.largest = nxt - p;
                            t.largest_pos = p;
                        }
                        if (nxt - p > t.max_message_bytes)
                            t.oversized++;
                        if (attr & 0x10)
                            t.transactional++;
                        if (!t.have_first || (count > 0 ? a.first_offset : base) < t.first_offset) {
                            t.have_first = 1;
                            t.first_offset = count > 0 ? a.first_offset : base;
                        }
                        *sc = t;
                    }
                }
                if (data != NULL) {
                    PyBuffer_Release(&dv);
                    Py_DECREF(data);
                }
                if (!taken)
                    break;
                if (count > 0)
                    last = a.last_offset;
                n_rec = count;
            } else {
                if (last != -1 && first != last + 1)
                    break;
                last = last_off;
                n_rec = count;
            }
        } else if (magic == 0 || magic == 1) {
            int8_t attributes = (int8_t)buf[p + ENTRY_ATTRIBUTES_OFFSET];
            int64_t c;
            if (deep)
                break;
            codec = attributes & CODEC_MASK;
            if (codec && stop_legacy_compressed)
                break;
            last_off = be_i64(buf + p);
            if (last_off == INT64_MAX)
                break;
            ts = magic == 1 ? be_i64(buf + p + ENTRY_TIMESTAMP_OFFSET) : -1;
            c = call_crc(crc32_fn, buf, (Py_ssize_t)p + MAGIC_OFFSET, (Py_ssize_t)nxt);
            if (c == -2)
                goto fatal;
            if (c < 0 || (uint32_t)c != be_u32(buf + p + ENTRY_CRC_OFFSET))
                break;
            if (!codec) {
                first = last_off;
                if (last != -1 && first != last + 1)
                    break;
                n_rec = 1;
            } else {
                first = last_off; /* the summary's first offset when nothing else is known */
                n_rec = 0;
                unknown++;
            }
            last = last_off;
        } else {
            break;
        }
        batches++;
        records += n_rec;
        nbytes += nxt - p;
        codecs[codec]++;
        magics[magic]++;
        if (!have) {
            first_base = first;
            max_last = last_off;
            max_ts = ts;
            have = 1;
        } else {
            if (last_off > max_last)
                max_last = last_off;
            if (ts > max_ts)
                max_ts = ts;
        }
        p = nxt;
    }
    PyBuffer_Release(&view);
    if (sc != NULL)
        PyBuffer_Release(&regs);
    if (!have)
        walk = result(R_DUMP_WALK, Py_BuildValue("(LLLLLLOOO(LLLLLLLL)(LLL))", (long long)p, 0LL, 0LL, 0LL, 0LL,
                                                 (long long)last, Py_None, Py_None, Py_None, 0LL, 0LL, 0LL, 0LL,
                                                 0LL, 0LL, 0LL, 0LL, 0LL, 0LL, 0LL));
    else
        walk = result(R_DUMP_WALK, Py_BuildValue(
            "(LLLLLLLLL(LLLLLLLL)(LLL))", (long long)p, (long long)batches, (long long)records, (long long)unknown,
            (long long)nbytes, (long long)last, (long long)first_base, (long long)max_last, (long long)max_ts,
            (long long)codecs[0], (long long)codecs[1], (long long)codecs[2], (long long)codecs[3],
            (long long)codecs[4], (long long)codecs[5], (long long)codecs[6], (long long)codecs[7],
            (long long)magics[0], (long long)magics[1], (long long)magics[2]));
    if (sc == NULL || walk == NULL)
        return walk;
    figs = scan_figures(sc);
    if (figs == NULL) {
        Py_DECREF(walk);
        return NULL;
    }
    return Py_BuildValue("(NN)", walk, figs);
fatal:
    PyBuffer_Release(&view);
    if (sc != NULL)
        PyBuffer_Release(&regs);
    return NULL;
}

/* The legacy wrapper of the reframed messages ``out`` (a bytes object, not consumed) compressed with ``codec`` (1-3),
 * as ``down_convert.reframe_v2_batch`` writes it: the framing ``codecs.compress`` puts around one snappy or lz4
 * block done here around the block function it calls (``fns`` as downconvert_run's; None there: that codec goes
 * through ``compress`` too), anything else through ``fns[F_COMPRESS]``. A new bytes object, or NULL: *fat 1 when the error must propagate, 0 when the Python path
 * must run. */
static PyObject *wrap_compressed(int codec, int64_t to_magic, int ts_bit, int64_t wrapper_ts, int64_t last,
                                 PyObject *out, PyObject *const *fns, int *fat)
{
    Py_ssize_t inner_len = PyBytes_GET_SIZE(out);
    PyObject *data;
    *fat = 0;
    if (((codec == 2 && inner_len <= 32768) || (codec == 3 && inner_len <= 65536))
        && fns[codec == 2 ? F_SNAPPY_BLOCK : F_LZ4_BLOCK] != Py_None) {
        PyObject *blk;
        Py_buffer bv;
        uint8_t head[20], tail[4] = {0, 0, 0, 0};
        const uint8_t *pv[4];
        Py_ssize_t pn[4];
        int np;
        blk = take_buffer(PyObject_CallOneArg(fns[codec == 2 ? F_SNAPPY_BLOCK : F_LZ4_BLOCK], out), &bv, fat);
        if (blk == NULL)
            return NULL;
        if (codec == 2) {
            /* "\x82SNAPPY\0", version 1, compatible version 1, then the chunk's big-endian length */
            memcpy(head, "\x82SNAPPY\0", 8);
            put_be32(head + 8, 1);
            put_be32(head + 12, 1);
            put_be32(head + 16, (uint32_t)bv.len);
            pv[0] = head;
            pn[0] = 20;
            pv[1] = (const uint8_t *)bv.buf;
            pn[1] = bv.len;
            np = 2;
        } else {
            /* magic 0x184D2204 (LE), FLG 0x60, BD 0x40, header checksum (KAFKA-3160's for magic 0); the
             * block's LE length (high bit: stored raw when compression did not shrink it); end mark */
            head[0] = 0x04;
            head[1] = 0x22;
            head[2] = 0x4D;
            head[3] = 0x18;
            head[4] = 0x60;
            head[5] = 0x40;
            head[6] = to_magic == 0 ? 0x1A : 0x82;
            pv[0] = head;
            pn[0] = 11;
            if (bv.len >= inner_len) {
                uint32_t v = (uint32_t)inner_len | 0x80000000u;
                head[7] = (uint8_t)v;
                head[8] = (uint8_t)(v >> 8);
                head[9] = (uint8_t)(v >> 16);
                head[10] = (uint8_t)(v >> 24);
                pv[1] = (const uint8_t *)PyBytes_AS_STRING(out);
                pn[1] = inner_len;
            } else {
                uint32_t v = (uint32_t)bv.len;
                head[7] = (uint8_t)v;
                head[8] = (uint8_t)(v >> 8);
                head[9] = (uint8_t)(v >> 16);
                head[10] = (uint8_t)(v >> 24);
                pv[1] = (const uint8_t *)bv.buf;
                pn[1] = bv.len;
            }
            pv[2] = tail;
            pn[2] = 4;
            np = 3;
        }
        data = wrapper_parts(to_magic, codec | ts_bit, wrapper_ts, last, np, pv, pn);
        PyBuffer_Release(&bv);
        Py_DECREF(blk);
    } else {
        PyObject *comp;
        Py_buffer cv;
        comp = take_buffer(PyObject_CallFunction(fns[F_COMPRESS], "iO", codec, out), &cv, fat);
        if (comp == NULL)
            return NULL;
        data = wrapper_core(to_magic, codec | ts_bit, wrapper_ts, last, (const uint8_t *)cv.buf, cv.len);
        PyBuffer_Release(&cv);
        Py_DECREF(comp);
    }
    if (data == NULL)
        *fat = PyErr_Occurred() ? keep_fatal_error() : 0;
    return data;
}

/* reframe_v2_wrapped(buf, p, to_magic, limit, codecs) -> (data, inner, first, last, records, with_headers) | None
 *
 * ``down_convert._reframe_v2`` for the compressed v2 batch at ``buf[p:]`` (gzip, snappy or lz4, not control, a
 * records count of at least 0): its records area decompressed (``codecs`` as downconvert_run's, ``limit`` the
 * decompression limit), reframed as legacy messages of ``to_magic`` with offsets relative to the wrapper, and
 * compressed into one wrapper, as ``reframe_v2_batch`` writes it. ``data`` is the wrapper (None: no record),
 * ``inner`` the messages it compressed. None wherever the Python path must run (it raises exactly). */
static PyObject *sp_reframe_v2_wrapped(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view, dv;
    int64_t p, to_magic, limit, nxt, base, batch_last, base_ts, lat;
    int32_t size, count;
    int16_t attr;
    int codec, has_lat, ts_bit, fat = 0;
    const uint8_t *buf;
    PyObject *dec, *out, *data;
    Reframe r;
    (void)self;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "reframe_v2_wrapped takes 5 arguments");
        return NULL;
    }
    if (arg_i64(args[1], &p) || arg_i64(args[2], &to_magic) || arg_i64(args[3], &limit) || (to_magic != 0 && to_magic != 1)
        || !PyTuple_Check(args[4]) || PyTuple_GET_SIZE(args[4]) != N_FNS)
        Py_RETURN_NONE;
    buf = walk_buffer(args[0], p, p, &view);
    if (buf == NULL)
        Py_RETURN_NONE;
    if (view.len - p < RECORD_BATCH_OVERHEAD || buf[p + MAGIC_OFFSET] != 2)
        goto decline;
    size = be_i32(buf + p + SIZE_OFFSET);
    nxt = p + LOG_OVERHEAD + (int64_t)size;
    attr = be_i16(buf + p + V2_ATTRIBUTES_OFFSET);
    codec = attr & CODEC_MASK;
    count = be_i32(buf + p + V2_RECORDS_COUNT_OFFSET);
    if ((int64_t)size + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD || nxt > view.len || (attr & 0x20) || codec < 1
        || codec > 3 || count < 0)
        goto decline;
    base = be_i64(buf + p);
    if (__builtin_add_overflow(base, (int64_t)be_i32(buf + p + V2_LAST_OFFSET_DELTA_OFFSET), &batch_last))
        goto decline;
    base_ts = be_i64(buf + p + V2_BASE_TIMESTAMP_OFFSET);
    lat = be_i64(buf + p + V2_MAX_TIMESTAMP_OFFSET);
    has_lat = (attr & 0x08) != 0;
    ts_bit = has_lat && to_magic > 0 ? 0x08 : 0;
    dec = decompress_area(codec, buf + p + RECORD_BATCH_OVERHEAD, (Py_ssize_t)(nxt - p - RECORD_BATCH_OVERHEAD), limit,
                          &PyTuple_GET_ITEM(args[4], 0), &dv, &fat);
    if (dec == NULL) {
        PyBuffer_Release(&view);
        if (fat)
            return NULL;
        Py_RETURN_NONE;
    }
    out = reframe_core((const uint8_t *)dv.buf, dv.len, count, base, base_ts, has_lat, lat, to_magic, ts_bit, 0, 0,
                       1, 0, 0, 0, &r);
    PyBuffer_Release(&dv);
    Py_DECREF(dec);
    PyBuffer_Release(&view);
    if (out == NULL)
        Py_RETURN_NONE;
    if (r.written == 0) {
        Py_DECREF(out);
        return Py_BuildValue("(OOLLLL)", Py_None, Py_None, (long long)r.first, (long long)r.last, 0LL,
                             (long long)r.with_headers);
    }
    data = wrap_compressed(codec, to_magic, ts_bit, to_magic > 0 ? (has_lat ? lat : r.max_ts) : -1, r.last, out,
                           &PyTuple_GET_ITEM(args[4], 0), &fat);
    if (data == NULL) {
        Py_DECREF(out);
        if (fat)
            return NULL;
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(NNLLLL)", data, out, (long long)r.first, (long long)r.last, (long long)r.written,
                         (long long)r.with_headers);
decline:
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

/* Whether a converted batch of ``n`` bytes whose last offset is ``last`` stays in the run: not above
 * DownConverter.add's --max-message-bytes (a KIP-126 split) and not rolling the segment (SegmentWriter.append's
 * size and relative-offset rules); either is the Python path's. */
static inline int run_keeps(int64_t n, int64_t last, int64_t max_bytes, int64_t wsize, int64_t wbase,
                            int64_t seg_bytes)
{
    return !(n > max_bytes || (wsize > 0 && wsize + n > seg_bytes) || last - wbase > INT32_MAX);
}

/* downconvert_run(buf, p, stop, end, checked, to_magic, first_offset, max_bytes, wsize, wbase, segment_bytes,
 *                 wrapper_header, limit, codecs, estimates[, max_records[, floor[, out]]])
 * -> DownconvertRun(position, data, batches, records, records_filtered, headers_dropped, producer_fields_dropped,
 *                   temporary_memory_bytes, log_end_offset, last_offset, uncompressed_messages, compressed_batches,
 *                   segment_size, estimates, estimates_updated) | None
 *
 * ``convert.DownConverter.add`` and ``SegmentWriter.append`` for a run of batches from ``p`` (while they
 * start before ``stop``) that take the common path: v2, not control, codec none/gzip/snappy/lz4 kept,
 * a valid CRC-32C (``checked`` 1: not checked for the first batch; 2: for none, as a broker's lazy down-conversion
 * reads batches without ensureValid), records that reframe, a result
 * within ``max_bytes`` that does not roll the output segment (``wsize`` bytes written to the one based
 * at ``wbase``). ``data`` is the converted bytes of the run, in order; the counts are what the Python
 * path adds up. ``estimates`` is the KIP-126 compression-ratio estimate per codec id 0..3 (a tuple of
 * four floats and the two steps): the run updates them after every compressed batch, in float
 * arithmetic as ``CompressionRatioEstimator`` does, and ``updated`` has bit ``codec`` set for those it
 * changed. The run stops before the first batch it cannot take: the Python path converts that one
 * (and raises its exact error), and any batch of more than ``max_records`` records (default INT32_MAX: the
 * Python path reads those a chunk at a time). With ``floor``, each batch must start above it (then above the
 * previous batch's last offset) and pass record/validate.py's offset checks (a last offset not below the base,
 * records increasing inside the batch's offsets), as ``convert.checks.SourceChecker`` checks it; any other batch
 * is left to the Python path too. ``codecs`` is the tuple of callables named by the F_* constants
 * (``convert.DownConverter`` builds it): the CRC-32C, ``decompress(codec, view)`` (with ``limit``) and
 * ``compress(codec, data)`` of codecs.py, and the block functions they call for one snappy or lz4 block,
 * which the run frames and unframes itself. With ``out`` (a writable buffer), the converted bytes are put
 * there from its start instead (``data`` is None; ``segment_size - wsize`` is how many), and the run stops
 * before a batch whose bytes do not fit (``wanted``: how many it needed). */
static PyObject *sp_downconvert_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    int64_t p, stop, end, checked, to_magic, first_offset, max_bytes, wsize, wbase, seg_bytes, wrap_head;
    int64_t max_count = INT32_MAX;
    int64_t batches = 0, records = 0, filtered = 0, with_headers = 0, producer = 0, tmem = 0, log_end = -1;
    int64_t last_out = -1, none_records = 0, comp_batches = 0, total = 0, floor = INT64_MIN, wanted = 0;
    float est[4], step_up = 0.0f, step_down = 0.0f;
    int updated = 0;
    PyObject *crc_fn, *parts = NULL, *joined, *ests, *const *fns;
    int64_t limit;
    const uint8_t *buf;
    Py_buffer outv;
    uint8_t *outp = NULL;
    (void)self;
    if (nargs < 15 || nargs > 18) {
        PyErr_SetString(PyExc_TypeError, "downconvert_run takes 15 to 18 arguments");
        return NULL;
    }
    if (arg_i64(args[1], &p) || arg_i64(args[2], &stop) || arg_i64(args[3], &end) || arg_i64(args[4], &checked)
        || arg_i64(args[5], &to_magic) || arg_i64(args[6], &first_offset) || arg_i64(args[7], &max_bytes)
        || arg_i64(args[8], &wsize) || arg_i64(args[9], &wbase) || arg_i64(args[10], &seg_bytes)
        || arg_i64(args[11], &wrap_head) || arg_i64(args[12], &limit) || (nargs >= 16 && arg_i64(args[15], &max_count))
        || (nargs >= 17 && arg_i64(args[16], &floor)))
        Py_RETURN_NONE;
    if (to_magic != 0 && to_magic != 1)
        Py_RETURN_NONE;
    if (!PyTuple_Check(args[13]) || PyTuple_GET_SIZE(args[13]) != N_FNS)
        Py_RETURN_NONE;
    fns = &PyTuple_GET_ITEM(args[13], 0);
    crc_fn = fns[F_CRC32C];
    ests = args[14];
    if (!PyTuple_Check(ests) || PyTuple_GET_SIZE(ests) != 6)
        Py_RETURN_NONE;
    for (int i = 0; i < 6; i++) {
        double v = PyFloat_AsDouble(PyTuple_GET_ITEM(ests, i));
        if (v == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        if (i < 4)
            est[i] = (float)v;
        else if (i == 4)
            step_up = (float)v;
        else
            step_down = (float)v;
    }
    if (nargs == 18 && args[17] != Py_None) {
        if (PyObject_GetBuffer(args[17], &outv, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
            return NULL;
        outp = (uint8_t *)outv.buf;
    }
    buf = walk_buffer(args[0], p, end, &view);
    if (buf == NULL) {
        if (outp != NULL)
            PyBuffer_Release(&outv);
        Py_RETURN_NONE;
    }
    if (outp == NULL && (parts = PyList_New(0)) == NULL)
        goto fatal;
    while (p < stop && p < end - HEADER_SIZE_UP_TO_MAGIC) {
        int32_t size = be_i32(buf + p + SIZE_OFFSET), count;
        int64_t nxt, base, batch_last, base_ts, lat, pid, inner_len, n;
        int16_t attr;
        int codec, has_lat, ts_bit, fat = 0;
        const uint8_t *inner;
        PyObject *dec = NULL, *out, *data;
        Py_buffer dv;
        Reframe r;
        if (size < RECORD_OVERHEAD_V0 || p > end - LOG_OVERHEAD - (int64_t)size || buf[p + MAGIC_OFFSET] != 2
            || size + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD)
            break;
        nxt = p + LOG_OVERHEAD + (int64_t)size;
        attr = be_i16(buf + p + V2_ATTRIBUTES_OFFSET);
        codec = attr & CODEC_MASK;
        count = be_i32(buf + p + V2_RECORDS_COUNT_OFFSET);
        if ((attr & 0x20) || codec > 3 || count < 0 || count > max_count)
            break; /* more records than a run holds at once: the Python path converts them a chunk at a time */
        if (!checked) {
            int64_t c = call_crc(crc_fn, buf, (Py_ssize_t)p + V2_ATTRIBUTES_OFFSET, (Py_ssize_t)nxt);
            if (c == -2)
                goto fatal;
            if (c < 0 || (uint32_t)c != be_u32(buf + p + V2_CRC_OFFSET))
                break;
        }
        if (checked != 2)
            checked = 0;
        base = be_i64(buf + p);
        if (__builtin_add_overflow(base, (int64_t)be_i32(buf + p + V2_LAST_OFFSET_DELTA_OFFSET), &batch_last)
            || batch_last == INT64_MAX || batch_last < base || base <= floor)
            break;
        base_ts = be_i64(buf + p + V2_BASE_TIMESTAMP_OFFSET);
        lat = be_i64(buf + p + V2_MAX_TIMESTAMP_OFFSET);
        pid = be_i64(buf + p + V2_PRODUCER_ID_OFFSET);
        has_lat = (attr & 0x08) != 0;
        ts_bit = has_lat && to_magic > 0 ? 0x08 : 0;
        if (codec == 0) {
            inner = buf + p + RECORD_BATCH_OVERHEAD;
            inner_len = nxt - p - RECORD_BATCH_OVERHEAD;
        } else {
            dec = decompress_area(codec, buf + p + RECORD_BATCH_OVERHEAD, (Py_ssize_t)(nxt - p - RECORD_BATCH_OVERHEAD),
                                  limit, fns, &dv, &fat);
            if (dec == NULL) {
                if (fat)
                    goto fatal;
                break;
            }
            inner = (const uint8_t *)dv.buf;
            inner_len = dv.len;
        }
        if (codec == 0 && outp != NULL) {
            /* Uncompressed: the messages are written straight into ``out`` (the caller's write buffer). */
            Py_ssize_t cap = reframe_cap((Py_ssize_t)inner_len, count), got;
            if (cap > outv.len - total) {
                wanted = cap;
                break; /* the caller makes room and the next run starts with this batch */
            }
            if (cap < 0)
                break;
            got = reframe_into(inner, (Py_ssize_t)inner_len, count, base, base_ts, has_lat, lat, to_magic, ts_bit, 1,
                               first_offset, 0, 1, base, batch_last, outp + total, &r);
            if (got < 0 || r.written == 0)
                break;
            n = inner_len = got;
            if (!run_keeps(n, r.last, max_bytes, wsize, wbase, seg_bytes))
                break;
            none_records += r.written;
            goto accepted;
        }
        out = reframe_core(inner, (Py_ssize_t)inner_len, count, base, base_ts, has_lat, lat, to_magic, ts_bit,
                           codec == 0, first_offset, codec != 0, 1, base, batch_last, &r);
        if (dec != NULL) {
            PyBuffer_Release(&dv);
            Py_DECREF(dec);
        }
        if (out == NULL)
            break;
        if (r.written == 0) {
            Py_DECREF(out);
            break;
        }
        inner_len = PyBytes_GET_SIZE(out);
        if (codec) {
            int64_t wrapper_ts = to_magic > 0 ? (has_lat ? lat : r.max_ts) : -1;
            data = wrap_compressed(codec, to_magic, ts_bit, wrapper_ts, r.last, out, fns, &fat);
            Py_DECREF(out);
            if (data == NULL) {
                if (fat)
                    goto fatal;
                break;
            }
        } else {
            data = out;
        }
        n = PyBytes_GET_SIZE(data);
        if (!run_keeps(n, r.last, max_bytes, wsize, wbase, seg_bytes)) {
            Py_DECREF(data);
            break;
        }
        if (outp != NULL) {
            if (n > outv.len - total) {
                Py_DECREF(data);
                wanted = n;
                break; /* the caller makes room and the next run starts with this batch */
            }
            memcpy(outp + total, PyBytes_AS_STRING(data), (size_t)n);
        } else if (PyList_Append(parts, data) < 0) {
            Py_DECREF(data);
            goto fatal;
        }
        Py_DECREF(data);
        if (codec) {
            /* CompressionRatioEstimator.updateEstimation after MemoryRecordsBuilder.close. */
            float observed = (float)((double)(n - wrap_head) / (double)inner_len);
            float cur = est[codec];
            if (observed > cur) {
                float up = cur + step_up;
                cur = up > observed ? up : observed;
            } else if (observed < cur) {
                float down = cur - step_down;
                cur = down > observed ? down : observed;
            }
            est[codec] = cur;
            updated |= 1 << codec;
            comp_batches++;
        } else {
            none_records += r.written;
        }
    accepted:
        batches++;
        records += r.written;
        filtered += r.filtered;
        with_headers += r.with_headers;
        if (pid >= 0 || (attr & 0x10))
            producer++;
        tmem += (int64_t)size + LOG_OVERHEAD + inner_len + (codec ? wrap_head : 0);
        if (batch_last + 1 > log_end)
            log_end = batch_last + 1;
        floor = batch_last;
        last_out = r.last;
        wsize += n;
        total += n;
        p = nxt;
    }
    PyBuffer_Release(&view);
    if (outp != NULL) {
        PyBuffer_Release(&outv);
        joined = Py_NewRef(Py_None);
    } else {
        joined = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
        if (joined == NULL) {
            Py_DECREF(parts);
            return NULL;
        }
        char *o = PyBytes_AS_STRING(joined);
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(parts); i++) {
            PyObject *part = PyList_GET_ITEM(parts, i);
            memcpy(o, PyBytes_AS_STRING(part), (size_t)PyBytes_GET_SIZE(part));
            o += PyBytes_GET_SIZE(part);
        }
        Py_DECREF(parts);
    }
    return result(R_DOWNCONVERT_RUN, Py_BuildValue(
        "(LNLLLLLLLLLLL(dddd)iL)", (long long)p, joined, (long long)batches, (long long)records, (long long)filtered,
        (long long)with_headers, (long long)producer, (long long)tmem, (long long)log_end, (long long)last_out,
        (long long)none_records, (long long)comp_batches, (long long)wsize, (double)est[0], (double)est[1],
        (double)est[2], (double)est[3], updated, (long long)wanted));
fatal:
    Py_XDECREF(parts);
    PyBuffer_Release(&view);
    if (outp != NULL)
        PyBuffer_Release(&outv);
    return NULL;
}

/* ------------------------------------------------------------------------------------------ consumer view */

/* The position state of ``fetch.consumer_view.ConsumerView`` (its ``_max_seen`` and result fields) and what a
 * walk adds to it. */
typedef struct {
    int64_t sent, returned, below, dups;
    int have_first, have_last, have_max;
    int64_t first, last, max_seen, next_fetch;
} ConsumerState;

/* One record at ``off`` through the loop of ``ConsumerView._batch``; -1 where Python's ints would go past int64. */
static inline int consumer_record(ConsumerState *s, int64_t off)
{
    s->sent++;
    if (s->have_max && off <= s->max_seen) {
        s->dups++;
        return 0;
    }
    s->have_max = 1;
    s->max_seen = off;
    if (off < s->next_fetch) {
        s->below++;
        return 0;
    }
    if (off == INT64_MAX)
        return -1;
    s->next_fetch = off + 1;
    s->returned++;
    if (!s->have_first) {
        s->have_first = 1;
        s->first = off;
    }
    s->have_last = 1;
    s->last = off;
    return 0;
}

/* ``legacy_records._key_value``'s checks on the message m[0:size] of ``magic``, without building the key and
 * value: 0 where it returns, -1 where it raises. The value's bounds in *vpos and *vlen (-1: null). */
static inline int legacy_key_value(const uint8_t *m, int64_t size, int magic, int64_t *vpos, int32_t *vlen)
{
    int64_t q = magic == 0 ? MSG_KEY_SIZE_OFFSET_V0 : MSG_KEY_SIZE_OFFSET_V1;
    int32_t n;
    if (q + VALUE_SIZE_LENGTH > size)
        return -1;
    n = be_i32(m + q);
    q += VALUE_SIZE_LENGTH;
    if (n >= 0) {
        if (q + n + VALUE_SIZE_LENGTH > size)
            return -1;
        q += n;
    }
    if (q + VALUE_SIZE_LENGTH > size)
        return -1;
    n = be_i32(m + q);
    q += VALUE_SIZE_LENGTH;
    if (n >= 0 && q + n > size)
        return -1;
    *vpos = q;
    *vlen = n < 0 ? -1 : n;
    return 0;
}

/* The records of a compressed v0/v1 wrapper whose inner message set is d[0:n], through consumer_record:
 * ``LegacyRecordBatch._deep_records``' checks (inner framing, at least one inner message, the v1 wrapper offset,
 * no compressed inner message, each inner key and value); -1 where it raises or int64 cannot follow it. Inner
 * CRCs are not checked, as there (they only set Record.crc_valid). */
static int consumer_inner(const uint8_t *d, int64_t n, int wrapper_magic, int64_t wrapper_offset, ConsumerState *s)
{
    int64_t p = 0, count = 0, last_inner = 0, base = 0;
    for (int pass = 0; pass < 2; pass++) {
        p = 0;
        while (n - p >= LOG_OVERHEAD) {
            int64_t off = be_i64(d + p), vpos;
            int32_t size = be_i32(d + p + SIZE_OFFSET), vlen;
            const uint8_t *m = d + p + LOG_OVERHEAD;
            if (size < RECORD_OVERHEAD_V0)
                return -1;
            if (n - p - LOG_OVERHEAD < size)
                break; /* a truncated tail inside the decompressed data is dropped */
            if (pass == 0) {
                if (m[MSG_ATTRIBUTES_OFFSET] & CODEC_MASK)
                    return -1;
                if (legacy_key_value(m, size, (int8_t)m[MSG_MAGIC_OFFSET], &vpos, &vlen) < 0)
                    return -1;
                count++;
                last_inner = off;
            } else {
                int64_t o = off;
                if (wrapper_magic == 1 && __builtin_add_overflow(base, off, &o))
                    return -1;
                if (consumer_record(s, o) < 0)
                    return -1;
            }
            p += LOG_OVERHEAD + (int64_t)size;
        }
        if (pass == 0) {
            if (count == 0)
                return -1;
            if (wrapper_magic == 1 && wrapper_offset != 0) {
                if (wrapper_offset < last_inner || __builtin_sub_overflow(wrapper_offset, last_inner, &base))
                    return -1;
            }
        }
    }
    return 0;
}

/* consumer_walk(buf, limit, max_seen, next_fetch_offset, codecs, decompress_limit[, known, base])
 * -> ConsumerWalk(position, batches, records_sent, records_returned, records_below_fetch_offset, duplicate_offsets,
 *                 first_returned_offset, last_returned_offset, max_seen, next_fetch_offset) | None
 *
 * The loops of ``ConsumerView._drain`` and ``_batch`` (no record callback) over the v0/v1 log entries of
 * buf[0:limit] (``limit``: what the buffer holds of the partition's bytes): takes each whole entry whose size,
 * magic, CRC-32, key, value and (for a wrapper) inner messages pass the checks of ``LegacyRecordBatch``
 * ``.ensure_valid`` and ``.records`` and applies the consumer's position rules to its records. Stops before the
 * first entry it cannot take (short, a v2 batch, anything those checks reject): the Python loop takes that one,
 * and raises or stops as it does. A wrapper's value is inflated by decompress_area (a single snappy chunk or lz4
 * block through the block functions, anything else through ``codecs.decompress``): ``codecs`` is the tuple
 * (decompress for magic 0, for magic 1, snappy_block_len, snappy_unblock, lz4_unblock), ``decompress_limit`` the
 * memory budget's. ``known`` (a dict, or None): partition position -> the inner message set (bytes) the
 * conversion compressed into the wrapper that starts there, used instead of inflating it; ``base``: the partition
 * position of buf[0]. */
static PyObject *sp_consumer_walk(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    int64_t limit, p = 0, batches = 0, inflate_limit, base = 0;
    ConsumerState s = {0};
    PyObject *first, *last, *max_seen, *fns[2][N_FNS] = {{NULL}}, *known = NULL;
    const uint8_t *buf;
    (void)self;
    if (nargs != 6 && nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "consumer_walk takes 6 or 8 arguments");
        return NULL;
    }
    if (nargs == 8 && args[6] != Py_None) {
        if (!PyDict_Check(args[6]) || arg_i64(args[7], &base))
            Py_RETURN_NONE;
        known = args[6];
    }
    if (arg_i64(args[1], &limit) || arg_i64(args[3], &s.next_fetch) || arg_i64(args[5], &inflate_limit)
        || !PyTuple_Check(args[4]) || PyTuple_GET_SIZE(args[4]) != 5)
        Py_RETURN_NONE;
    if (args[2] != Py_None) {
        if (arg_i64(args[2], &s.max_seen))
            Py_RETURN_NONE;
        s.have_max = 1;
    }
    for (int mg = 0; mg < 2; mg++) { /* decompress_area's callables, with the decompress of the wrapper's magic */
        fns[mg][F_DECOMPRESS] = PyTuple_GET_ITEM(args[4], mg);
        fns[mg][F_SNAPPY_LEN] = PyTuple_GET_ITEM(args[4], 2);
        fns[mg][F_SNAPPY_UNBLOCK] = PyTuple_GET_ITEM(args[4], 3);
        fns[mg][F_LZ4_UNBLOCK] = PyTuple_GET_ITEM(args[4], 4);
    }
    buf = walk_buffer(args[0], 0, limit, &view);
    if (buf == NULL)
        Py_RETURN_NONE;
    while (limit - p >= HEADER_SIZE_UP_TO_MAGIC) {
        const uint8_t *m = buf + p + LOG_OVERHEAD;
        int32_t size = be_i32(buf + p + SIZE_OFFSET), vlen;
        int8_t magic = (int8_t)buf[p + MAGIC_OFFSET];
        int64_t offset = be_i64(buf + p), vpos;
        int codec;
        ConsumerState t = s;
        if (size < RECORD_OVERHEAD_V0 || (magic != 0 && magic != 1) || limit - p - LOG_OVERHEAD < size)
            break;
        if (crc32_any(0, m + MSG_MAGIC_OFFSET, (size_t)size - MSG_MAGIC_OFFSET) != be_u32(m + MSG_CRC_OFFSET))
            break;
        if (legacy_key_value(m, size, magic, &vpos, &vlen) < 0)
            break;
        codec = m[MSG_ATTRIBUTES_OFFSET] & CODEC_MASK;
        if (codec == 0) {
            if (consumer_record(&t, offset) < 0)
                break;
        } else {
            PyObject *data;
            Py_buffer dv;
            int fat = 0, rc;
            if (codec > 3 || vlen < 0)
                break; /* zstd and unknown codecs, a null value: the Python path raises */
            data = NULL;
            if (known != NULL) { /* the inner message set the conversion compressed into this wrapper */
                PyObject *key = PyLong_FromLongLong(base + p), *inner;
                if (key == NULL)
                    goto fatal;
                inner = PyDict_GetItemWithError(known, key);
                Py_DECREF(key);
                if (inner == NULL && PyErr_Occurred())
                    goto fatal;
                if (inner != NULL && PyBytes_Check(inner)) {
                    data = Py_NewRef(inner);
                    if (PyObject_GetBuffer(data, &dv, PyBUF_SIMPLE) < 0) {
                        Py_DECREF(data);
                        goto fatal;
                    }
                }
            }
            if (data == NULL)
                data = decompress_area(codec, m + vpos, vlen, inflate_limit, fns[magic], &dv, &fat);
            if (data == NULL) {
                if (fat)
                    goto fatal;
                break;
            }
            rc = consumer_inner((const uint8_t *)dv.buf, dv.len, magic, offset, &t);
            PyBuffer_Release(&dv);
            Py_DECREF(data);
            if (rc < 0)
                break;
        }
        s = t;
        batches++;
        p += LOG_OVERHEAD + (int64_t)size;
    }
    PyBuffer_Release(&view);
    first = s.have_first ? PyLong_FromLongLong(s.first) : Py_NewRef(Py_None);
    last = s.have_last ? PyLong_FromLongLong(s.last) : Py_NewRef(Py_None);
    max_seen = s.have_max ? PyLong_FromLongLong(s.max_seen) : Py_NewRef(Py_None);
    if (first == NULL || last == NULL || max_seen == NULL) {
        Py_XDECREF(first);
        Py_XDECREF(last);
        Py_XDECREF(max_seen);
        return NULL;
    }
    return result(R_CONSUMER_WALK, Py_BuildValue("(LLLLLLNNNL)", (long long)p, (long long)batches,
                                                 (long long)s.sent, (long long)s.returned, (long long)s.below,
                                                 (long long)s.dups, first, last, max_seen,
                                                 (long long)s.next_fetch));
fatal:
    PyBuffer_Release(&view);
    return NULL;
}

/* ------------------------------------------------------------------------------------------ module */

/* configure(Record, Header): the NamedTuple classes parse_records builds. */
static PyObject *sp_configure(PyObject *self, PyObject *args)
{
    PyObject *rec, *hdr;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!O!:configure", &PyType_Type, &rec, &PyType_Type, &hdr))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)rec, &PyTuple_Type) || !PyType_IsSubtype((PyTypeObject *)hdr, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "configure needs two tuple subclasses");
        return NULL;
    }
    Py_INCREF(rec);
    Py_INCREF(hdr);
    Py_XSETREF(record_type, (PyTypeObject *)rec);
    Py_XSETREF(header_type, (PyTypeObject *)hdr);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", sp_configure, METH_VARARGS, "configure(Record, Header): the record classes to build."},
    {"parse_records", (PyCFunction)(void (*)(void))sp_parse_records, METH_FASTCALL,
     "parse_records(d, p, end, count, base_offset, base_timestamp, log_append_time, base_sequence): "
     "default_records.parse_records, or None where the Python function must run."},
    {"legacy_deep_records", (PyCFunction)(void (*)(void))sp_legacy_deep_records, METH_FASTCALL,
     "legacy_deep_records(data, at, count, base, add_base, wrapper_ts, wrapper_lat): LegacyRecordBatch."
     "_deep_records_py's (records, next position) up to the first inner message it must decode, or None."},
    {"encode_records", (PyCFunction)(void (*)(void))sp_encode_records, METH_FASTCALL,
     "encode_records(records, base_offset, base_timestamp): default_records.encode_records_py's (area, last offset, "
     "max timestamp), or None where it must run."},
    {"encode_entries", (PyCFunction)(void (*)(void))sp_encode_entries, METH_FASTCALL,
     "encode_entries(records, magic, attributes, timestamp, offset_shift): legacy_records.encode_entries_py's "
     "(entries, max timestamp), or None where it must run."},
    {"plan_step", (PyCFunction)(void (*)(void))sp_plan_step, METH_FASTCALL,
     "plan_step(chunk, i, magic, compressed, header_size, write_limit, ratio, uncompressed, records, base, last, "
     "base_ts): estimator.plan_step_py's result, stopping before any record it does not size."},
    {"json_record_lines", (PyCFunction)(void (*)(void))sp_json_record_lines, METH_FASTCALL,
     "json_record_lines(records, head, v2, enc): dump's JSON line of each record without headers (None for the "
     "others), or None."},
    {"parse_records_chunk", (PyCFunction)(void (*)(void))sp_parse_records_chunk, METH_FASTCALL,
     "parse_records_chunk(d, p, end, count, base_offset, base_timestamp, log_append_time, base_sequence): "
     "default_records.parse_records_chunk_py's (records, next position), or None where it must run."},
    {"validate_records", (PyCFunction)(void (*)(void))sp_validate_records, METH_FASTCALL,
     "validate_records(d, p, end, count, base_offset): (first offset, last offset, consecutive) of the records "
     "parse_records would return, or None where it raises."},
    {"reframe_v2_records", (PyCFunction)(void (*)(void))sp_reframe_v2_records, METH_FASTCALL,
     "reframe_v2_records(...): down_convert.reframe_v2_records' fields, or None."},
    {"record_stats", (PyCFunction)(void (*)(void))sp_record_stats, METH_FASTCALL,
     "record_stats(records, registers, prev_ts, compressed, control): (uncompressed, null_keys, timestamps) of "
     "scan.stats.BatchStats._records without key sharing, or None."},
    {"reframe_v2_wrapped", (PyCFunction)(void (*)(void))sp_reframe_v2_wrapped, METH_FASTCALL,
     "reframe_v2_wrapped(buf, p, to_magic, limit, codecs): (data, inner, first, last, records, with_headers) of "
     "a compressed v2 batch down-converted into one legacy wrapper, or None."},
    {"legacy_wrapper", (PyCFunction)(void (*)(void))sp_legacy_wrapper, METH_FASTCALL,
     "legacy_wrapper(magic, attributes, timestamp, last_offset, value): down_convert.wrapper_entry_py's bytes, "
     "or None."},
    {"verify_walk", (PyCFunction)(void (*)(void))sp_verify_walk, METH_FASTCALL,
     "verify_walk(buf, p, stop, end, crc32c, crc32): file_records._verify's loop."},
    {"headers_walk", (PyCFunction)(void (*)(void))sp_headers_walk, METH_FASTCALL,
     "headers_walk(win, lp, wl, headers): recover_fast's window loop."},
    {"index_walk", (PyCFunction)(void (*)(void))sp_index_walk, METH_FASTCALL,
     "index_walk(data, pos0, base, interval, last_index_entry, max_ts, max_ts_offset, points): SegmentIndexer's walk."},
    {"hop_rules", (PyCFunction)(void (*)(void))sp_hop_rules, METH_FASTCALL,
     "hop_rules(fd, p, limit, size, max_n, probe_n, probe_below, base, interval, verify, last_index_entry, max_ts, "
     "max_ts_offset, time_last_ts, time_last_offset, index_last, index_count, time_count, latest_epoch, index_out, "
     "time_out, epochs_out, arrays): hop_walk and recover_rules in one loop, or None."},
    {"recover_rules", (PyCFunction)(void (*)(void))sp_recover_rules, METH_FASTCALL,
     "recover_rules(headers, pos0, base, interval, verify, last_index_entry, max_ts, max_ts_offset, time_last_ts, "
     "time_last_offset, index_last, index_count, time_count, latest_epoch, index_out, time_out, epochs_out, "
     "arrays): recover_fast's rules for a chunk of headers, or None."},
    {"answer_positions", (PyCFunction)(void (*)(void))sp_answer_positions, METH_FASTCALL,
     "answer_positions(positions, sizes, last_offsets, sorted, order, is_start, batch_last, prior_max, carry): "
     "OffsetEntriesCheck.feed's answers, or None."},
    {"answer_times", (PyCFunction)(void (*)(void))sp_answer_times, METH_FASTCALL,
     "answer_times(last_offsets, max_timestamps, sorted, order, found, batch_last, prior_max_ts, carry_last, "
     "carry_ts, done): TimeEntriesCheck.feed's answers, or None."},
    {"hop_walk", (PyCFunction)(void (*)(void))sp_hop_walk, METH_FASTCALL,
     "hop_walk(fd, p, limit, max_n, headers[, probe_n, probe_below]): recover_fast's hopping loop."},
    {"dump_walk", (PyCFunction)(void (*)(void))sp_dump_walk, METH_FASTCALL,
     "dump_walk(buf, p, stop, end, last, flags, crc32c, crc32, decompress): dump's plain batches."},
    {"downconvert_run", (PyCFunction)(void (*)(void))sp_downconvert_run, METH_FASTCALL,
     "downconvert_run(buf, p, stop, end, checked, to_magic, first_offset, max_bytes, wsize, wbase, segment_bytes, "
     "wrapper_header, limit, codecs, estimates[, max_records[, floor[, out]]]): convert.DownConverter's common batches."},
    {"crc32", sp_crc32, METH_VARARGS, "crc32(data, value=0): zlib's CRC-32."},
    {"consumer_walk", (PyCFunction)(void (*)(void))sp_consumer_walk, METH_FASTCALL,
     "consumer_walk(buf, limit, max_seen, next_fetch_offset, codecs, decompress_limit[, known, base]): "
     "fetch.consumer_view's "
     "legacy entries."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kafkatool._speedups",
    "Compiled twins of kafkatool's per-record and per-batch loops (see _speedups.c).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__speedups(void)
{
    PyObject *m, *layout;
    crc32_init();
#ifdef KT_X86_CLMUL
    {
        unsigned int eax, ebx, ecx, edx;
        have_clmul = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_PCLMUL) && (ecx & bit_SSE4_1);
        /* The CPU's and the OS's (it saves the zmm registers) AVX-512 support, as GCC's runtime checks them. */
        __builtin_cpu_init();
        have_vclmul = have_clmul && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")
                      && __builtin_cpu_supports("vpclmulqdq");
    }
#endif
    m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    for (int i = 0; i < N_RESULTS; i++) {
        if (result_types[i] == NULL) {
            result_types[i] = PyStructSequence_NewType(&result_descs[i]);
            if (result_types[i] == NULL)
                goto fail;
        }
        /* the name after the module's: kafkatool._speedups.VerifyWalk -> VerifyWalk */
        if (PyModule_AddObjectRef(m, strrchr(result_descs[i].name, '.') + 1, (PyObject *)result_types[i]) < 0)
            goto fail;
    }
    layout = PyDict_New();
    if (layout == NULL)
        goto fail;
    for (size_t i = 0; i < sizeof(layout_names) / sizeof(layout_names[0]); i++) {
        PyObject *v = PyLong_FromLong(layout_names[i].value);
        if (v == NULL || PyDict_SetItemString(layout, layout_names[i].name, v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(layout);
            goto fail;
        }
        Py_DECREF(v);
    }
    if (PyModule_AddObject(m, "LAYOUT", layout) < 0) {
        Py_DECREF(layout);
        goto fail;
    }
#ifdef KT_X86_CLMUL
    if (PyModule_AddIntConstant(m, "CRC32_CLMUL", have_clmul) < 0
        || PyModule_AddIntConstant(m, "CRC32_VCLMUL", have_vclmul) < 0)
        goto fail;
#else
    if (PyModule_AddIntConstant(m, "CRC32_CLMUL", 0) < 0 || PyModule_AddIntConstant(m, "CRC32_VCLMUL", 0) < 0)
        goto fail;
#endif
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
