/* Portable C primitives of the engine's byte scanners (declared for Cython in portable.pxd).
 *
 * Everything compiler- or machine-specific the engine uses is here, each with a plain C
 * fallback chosen at compile time:
 *   - hs_load_le64: eight bytes as an integer whose lowest byte is the first one, on any byte
 *     order (the word tricks below look for "the lowest flagged byte", which is the first
 *     matching byte only in that order);
 *   - hs_ctz64 / hs_ctz32: count trailing zeros (GCC/Clang builtins, MSVC _BitScanForward);
 *   - hs_below_21: SSE2 (GCC/Clang with __SSE2__, MSVC on x64 or with /arch:SSE2).
 * Defining HTMLSTREAM_PORTABLE (setup.py does when the environment has HTMLSTREAM_PORTABLE=1)
 * turns every fast path off, so that the fallbacks can be built and tested on any machine.
 * This file is plain C: tests/c/test_portable.c includes it alone (also cross-compiled).
 */
#ifndef HS_PORTABLE_H
#define HS_PORTABLE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(_MSC_VER) && !defined(HTMLSTREAM_PORTABLE)
#include <intrin.h>
#endif

#if defined(_MSC_VER) && !defined(__cplusplus)
#define HS_INLINE static __inline
#else
#define HS_INLINE static inline
#endif

#if defined(HTMLSTREAM_PORTABLE)
#define HS_PORTABLE_BUILD 1
#else
#define HS_PORTABLE_BUILD 0
#endif

/* Free-threaded CPython (3.13t and later, Py_GIL_DISABLED from pyconfig.h): the engine turns
   off its module-level memos, which only the GIL makes safe (units.pyx). */
#if defined(Py_GIL_DISABLED)
#define HS_FREE_THREADED 1
#else
#define HS_FREE_THREADED 0
#endif

/* ---- byte order ------------------------------------------------------------------------- */
#if defined(HTMLSTREAM_PORTABLE)
#define HS_LOAD_NATIVE_LE 0
#define HS_LOAD_BSWAP 0
#elif defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) \
    && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HS_LOAD_NATIVE_LE 1
#define HS_LOAD_BSWAP 0
#elif defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) \
    && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ && (defined(__GNUC__) || defined(__clang__))
#define HS_LOAD_NATIVE_LE 0
#define HS_LOAD_BSWAP 1
#elif defined(_MSC_VER) \
    && (defined(_M_X64) || defined(_M_IX86) || defined(_M_ARM64) || defined(_M_ARM))
#define HS_LOAD_NATIVE_LE 1     /* every Windows target is little-endian */
#define HS_LOAD_BSWAP 0
#else
#define HS_LOAD_NATIVE_LE 0     /* unknown byte order: assemble the word from its bytes */
#define HS_LOAD_BSWAP 0
#endif

/* Eight bytes from p (any alignment), p[0] in the lowest eight bits. */
HS_INLINE uint64_t hs_load_le64(const unsigned char* p) {
#if HS_LOAD_NATIVE_LE
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
#elif HS_LOAD_BSWAP
    uint64_t w;
    memcpy(&w, p, 8);
    return __builtin_bswap64(w);
#else
    return (uint64_t)p[0] | ((uint64_t)p[1] << 8) | ((uint64_t)p[2] << 16)
        | ((uint64_t)p[3] << 24) | ((uint64_t)p[4] << 32) | ((uint64_t)p[5] << 40)
        | ((uint64_t)p[6] << 48) | ((uint64_t)p[7] << 56);
#endif
}

/* ---- count trailing zeros (m != 0) ------------------------------------------------------ */
HS_INLINE int hs_ctz64(uint64_t m) {
#if !defined(HTMLSTREAM_PORTABLE) && (defined(__GNUC__) || defined(__clang__))
    return __builtin_ctzll(m);
#elif !defined(HTMLSTREAM_PORTABLE) && defined(_MSC_VER) && (defined(_M_X64) || defined(_M_ARM64))
    unsigned long k;
    _BitScanForward64(&k, m);
    return (int)k;
#elif !defined(HTMLSTREAM_PORTABLE) && defined(_MSC_VER)
    unsigned long k;
    if ((uint32_t)m) {
        _BitScanForward(&k, (unsigned long)(uint32_t)m);
        return (int)k;
    }
    _BitScanForward(&k, (unsigned long)(uint32_t)(m >> 32));
    return (int)k + 32;
#else
    /* De Bruijn: the lowest set bit alone, times the sequence, indexes its position. */
    static const unsigned char index64[64] = {
        0, 1, 48, 2, 57, 49, 28, 3, 61, 58, 50, 42, 38, 29, 17, 4,
        62, 55, 59, 36, 53, 51, 43, 22, 45, 39, 33, 30, 24, 18, 12, 5,
        63, 47, 56, 27, 60, 41, 37, 16, 54, 35, 52, 21, 44, 32, 23, 11,
        46, 26, 40, 15, 34, 20, 31, 10, 25, 14, 19, 9, 13, 8, 7, 6};
    return index64[((m & (0 - m)) * UINT64_C(0x03F79D71B4CB0A89)) >> 58];
#endif
}

HS_INLINE int hs_ctz32(unsigned m) {
#if !defined(HTMLSTREAM_PORTABLE) && (defined(__GNUC__) || defined(__clang__))
    return __builtin_ctz(m);
#elif !defined(HTMLSTREAM_PORTABLE) && defined(_MSC_VER)
    unsigned long k;
    _BitScanForward(&k, (unsigned long)m);
    return (int)k;
#else
    return hs_ctz64((uint64_t)m);
#endif
}

/* ---- byte search -------------------------------------------------------------------------- */
/* The first byte c in [p, end), or NULL, for the closing quote of an attribute value: the first
   16 bytes a word at a time (half of the values are shorter: no call), the rest by memchr.  (In
   a word in hs_load_le64 order, the lowest byte flagged by the zero-byte test is exactly the
   first match: a borrow only flags bytes above a true match.)  Text is searched with memchr
   alone: its runs are longer, this was slower. */
HS_INLINE const unsigned char* hs_find_byte(const unsigned char* p, const unsigned char* end,
                                            unsigned char c) {
    if (end - p >= 16) {
        const uint64_t ones = UINT64_C(0x0101010101010101), highs = UINT64_C(0x8080808080808080);
        uint64_t w, x, m;
        w = hs_load_le64(p);
        x = w ^ (ones * c);
        m = (x - ones) & ~x & highs;
        if (m) return p + (hs_ctz64(m) >> 3);
        w = hs_load_le64(p + 8);
        x = w ^ (ones * c);
        m = (x - ones) & ~x & highs;
        if (m) return p + 8 + (hs_ctz64(m) >> 3);
        p += 16;
    }
    return (const unsigned char*)memchr(p, c, (size_t)(end - p));
}

/* ---- sixteen bytes at a time -------------------------------------------------------------- */
#if !defined(HTMLSTREAM_PORTABLE) && (defined(__SSE2__) || defined(_M_X64) \
    || (defined(_M_IX86_FP) && _M_IX86_FP >= 2))
#define HS_HAVE_SSE2 1
#include <emmintrin.h>
#else
#define HS_HAVE_SSE2 0
#endif

/* Bit i of the answer is about p[i]: the bytes below 0x21 (HTML whitespace is among them), and
   in *amp the '&' bytes. */
HS_INLINE unsigned hs_below_21(const unsigned char* p, unsigned* amp) {
#if HS_HAVE_SSE2
    __m128i x = _mm_loadu_si128((const __m128i*)p);
    *amp = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8(0x26)));
    return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x20)), x));
#else
    unsigned m = 0, a = 0, k;
    for (k = 0; k < 16; k++) {
        m |= (unsigned)(p[k] < 0x21) << k;
        a |= (unsigned)(p[k] == 0x26) << k;
    }
    *amp = a;
    return m;
#endif
}

/* The same for the last n - j (1 to 15) bytes of v[:n]; ``back``: the sixteen bytes that end at
   v + n may be read (they are in the tag). */
HS_INLINE unsigned hs_below_21_tail(const unsigned char* v, ptrdiff_t j, ptrdiff_t n, int back,
                                    unsigned* amp) {
    unsigned r = (unsigned)(n - j), m, a = 0, k;
    if (back) {
        m = hs_below_21(v + n - 16, &a) >> (16 - r);
        *amp = a >> (16 - r);
        return m;
    }
    m = 0;
    for (k = 0; k < r; k++) {
        m |= (unsigned)(v[j + k] < 0x21) << k;
        a |= (unsigned)(v[j + k] == 0x26) << k;
    }
    *amp = a;
    return m;
}

/* Copy p[:n] to d while its bytes are "plain" (ASCII but NUL, '&' and CR: the same characters in
   every encoding the engine reads, with nothing to decode or normalise); the number of bytes
   copied: n when all of them are plain.  Sixteen bytes at a time (an attribute value or a text
   chunk is tens of bytes: a byte at a time was ~6 instructions a byte). */
HS_INLINE ptrdiff_t hs_plain_copy(const unsigned char* p, ptrdiff_t n, unsigned char* d) {
    ptrdiff_t j = 0;
#if HS_HAVE_SSE2
    const __m128i zero = _mm_setzero_si128(), amp = _mm_set1_epi8('&'), cr = _mm_set1_epi8('\r');
    while (n - j >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i*)(p + j));
        __m128i bad = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, zero), _mm_cmpeq_epi8(x, amp)),
                                   _mm_or_si128(_mm_cmpeq_epi8(x, cr), x));
        unsigned bits = (unsigned)_mm_movemask_epi8(bad);     /* (x: its high bit, >= 0x80) */
        if (bits) {
            j += hs_ctz32(bits);
            memcpy(d, p, (size_t)j);
            return j;
        }
        _mm_storeu_si128((__m128i*)(d + j), x);
        j += 16;
    }
    if (j > 0 && j < n) {
        /* the last n - j bytes: the sixteen that end the run, the first ones already copied */
        __m128i x = _mm_loadu_si128((const __m128i*)(p + n - 16));
        __m128i bad = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, zero), _mm_cmpeq_epi8(x, amp)),
                                   _mm_or_si128(_mm_cmpeq_epi8(x, cr), x));
        unsigned bits = (unsigned)_mm_movemask_epi8(bad) & (0xFFFFu << (16 - (n - j)));
        if (bits) {
            ptrdiff_t k = n - 16 + hs_ctz32(bits);      /* (j <= k) */
            memcpy(d + j, p + j, (size_t)(k - j));
            return k;
        }
        _mm_storeu_si128((__m128i*)(d + n - 16), x);
        return n;
    }
#endif
    for (; j < n; j++) {
        unsigned char c = p[j];
        if (c == 0 || c == '&' || c == '\r' || c >= 0x80)
            return j;
        d[j] = c;
    }
    return n;
}

/* The first '<' in [p, end), or NULL, for text in the data state: most runs of text between
   tags are short (on the corpus 75-86 % are under 16 bytes, a quarter empty), so the first
   sixteen bytes are tested at once with no call; the rest by memchr. */
HS_INLINE const unsigned char* hs_find_lt(const unsigned char* p, const unsigned char* end) {
#if HS_HAVE_SSE2
    if (end - p >= 16) {
        unsigned bits = (unsigned)_mm_movemask_epi8(
            _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i*)p), _mm_set1_epi8('<')));
        if (bits)
            return p + hs_ctz32(bits);
        p += 16;
    }
#endif
    return (const unsigned char*)memchr(p, '<', (size_t)(end - p));
}

/* The first '<' at p[i], i < end - p - 2, that may start markup in RCDATA, RAWTEXT or script
   data: followed by '/' and a byte that is ``first`` once ASCII-lower-cased (the first letter of
   the only end tag that can close the text; 0: any byte), or, with ``bang``, followed by '!'.
   NULL if there is none (the last two bytes are not looked at).  Script whose strings and
   comments are full of '<' and '</' is crossed sixteen bytes at a time. */
HS_INLINE const unsigned char* hs_find_text_markup(const unsigned char* p, const unsigned char* end,
                                                   unsigned char first, int bang) {
    const unsigned char* q;
#if HS_HAVE_SSE2
    const __m128i lt = _mm_set1_epi8('<'), slash = _mm_set1_epi8('/'), excl = _mm_set1_epi8('!');
    const __m128i letter = _mm_set1_epi8((char)first), low = _mm_set1_epi8(0x20);
    while (end - p >= 18) {         /* p[0..17]: sixteen starts and the two bytes after them */
        __m128i a = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i*)p), lt);
        __m128i b = _mm_loadu_si128((const __m128i*)(p + 1));
        __m128i m = _mm_and_si128(a, _mm_cmpeq_epi8(b, slash));
        unsigned bits;
        if (first)
            m = _mm_and_si128(m, _mm_cmpeq_epi8(
                _mm_or_si128(_mm_loadu_si128((const __m128i*)(p + 2)), low), letter));
        if (bang)
            m = _mm_or_si128(m, _mm_and_si128(a, _mm_cmpeq_epi8(b, excl)));
        bits = (unsigned)_mm_movemask_epi8(m);
        if (bits)
            return p + hs_ctz32(bits);
        p += 16;
    }
#endif
    while (end - p > 2) {
        q = (const unsigned char*)memchr(p, '<', (size_t)(end - p - 2));
        if (q == NULL)
            return NULL;
        if ((q[1] == '/' && (!first || (q[2] | 0x20) == first)) || (bang && q[1] == '!'))
            return q;
        p = q + 1;
    }
    return NULL;
}

/* Whether one of the k (1 to 8) bytes ``chars`` is among p[0..n); when none is, *high says
   whether a byte of p[0..n) is 0x80 or above (else it is left as it may be).  ``table``: 256
   flags, 1 for each of ``chars`` (the byte-by-byte form).  Sixteen bytes at a time: the last
   sixteen are read again where n is no multiple of sixteen. */
HS_INLINE int hs_find_any(const unsigned char* p, ptrdiff_t n, const unsigned char* chars, int k,
                          const unsigned char* table, int* high) {
    ptrdiff_t i = 0;
    int h = 0;
#if HS_HAVE_SSE2
    if (n >= 16) {
        __m128i pats[8], hi = _mm_setzero_si128();
        int j;
        for (j = 0; j < k; j++) pats[j] = _mm_set1_epi8((char)chars[j]);
        for (;;) {
            __m128i x, m;
            if (i + 16 > n) i = n - 16;         /* (the tail: the last sixteen bytes again) */
            x = _mm_loadu_si128((const __m128i*)(p + i));
            m = _mm_cmpeq_epi8(x, pats[0]);
            for (j = 1; j < k; j++) m = _mm_or_si128(m, _mm_cmpeq_epi8(x, pats[j]));
            if (_mm_movemask_epi8(m)) return 1;
            hi = _mm_or_si128(hi, x);
            i += 16;
            if (i >= n) break;
        }
        *high = _mm_movemask_epi8(hi) != 0;
        return 0;
    }
#else
    (void)chars;
    (void)k;
#endif
    for (; i < n; i++) {
        if (table[p[i]]) return 1;
        h |= p[i] >= 0x80;
    }
    *high = h;
    return 0;
}

#endif /* HS_PORTABLE_H */
