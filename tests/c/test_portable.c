/* Checks hs_portable.h's primitives against byte-by-byte references on pseudo-random bytes.
 * Built by tests/test_portable_c.py three ways: as the engine is (fast paths), with
 * -DHTMLSTREAM_PORTABLE (the fallbacks), and, when a cross compiler and qemu are there, for a
 * big-endian machine (s390x).  Prints "ok" and exits 0, or names the first failure. */
#include <stdio.h>
#include <stdlib.h>

#include "hs_portable.h"

static unsigned long long state = 0x9E3779B97F4A7C15ULL;

static unsigned next_byte(void) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (unsigned)(state >> 56);
}

#define CHECK(cond, ...) do { if (!(cond)) { printf(__VA_ARGS__); printf("\n"); return 1; } } while (0)

int main(void) {
    unsigned char buf[64];
    static const unsigned char alphabet[] = {'"', '\'', '&', ' ', '\t', '\n', '>', 'a', 'Z', 0x00, 0x20,
                                             0x21, 0x80, 0xFF, 0x1F, 0x3E, 0x3D};
    int round, i, k;
    for (round = 0; round < 200000; round++) {
        for (i = 0; i < 64; i++) {
            unsigned r = next_byte();
            buf[i] = (r & 1) ? alphabet[(r >> 1) % sizeof(alphabet)] : (unsigned char)next_byte();
        }
        /* hs_load_le64: p[0] in the lowest bits. */
        {
            uint64_t w = hs_load_le64(buf + (round & 7)), want = 0;
            for (k = 7; k >= 0; k--) want = (want << 8) | buf[(round & 7) + k];
            CHECK(w == want, "hs_load_le64 round %d", round);
        }
        /* hs_ctz64 / hs_ctz32 on one to all bits. */
        {
            uint64_t m = hs_load_le64(buf) | ((uint64_t)1 << (buf[9] & 63));
            int want = 0;
            while (!((m >> want) & 1)) want++;
            CHECK(hs_ctz64(m) == want, "hs_ctz64(%llx) = %d, want %d", (unsigned long long)m,
                  hs_ctz64(m), want);
            {
                unsigned m32 = (unsigned)(m & 0xFFFFFFFFu) | (1u << (buf[10] & 31));
                int want32 = 0;
                while (!((m32 >> want32) & 1)) want32++;
                CHECK(hs_ctz32(m32) == want32, "hs_ctz32(%x)", m32);
            }
        }
        /* hs_find_byte: the first c in [p, end), every start and length. */
        {
            unsigned char c = alphabet[round % 3];
            int start = round % 16, len = (round / 16) % 40;
            const unsigned char* want = NULL;
            for (k = start; k < start + len; k++) if (buf[k] == c) { want = buf + k; break; }
            CHECK(hs_find_byte(buf + start, buf + start + len, c) == want,
                  "hs_find_byte start %d len %d c %02x", start, len, c);
        }
        /* hs_below_21 and its tail form. */
        {
            unsigned amp, m = hs_below_21(buf + 3, &amp), want = 0, want_amp = 0;
            int n = 3 + 1 + (round % 15), j = 3;
            for (k = 0; k < 16; k++) {
                want |= (unsigned)(buf[3 + k] < 0x21) << k;
                want_amp |= (unsigned)(buf[3 + k] == 0x26) << k;
            }
            CHECK(m == want && amp == want_amp, "hs_below_21 round %d", round);
            n = 20 + (round % 15);
            j = n - 1 - (round % 15);
            for (k = 0, want = 0, want_amp = 0; k < n - j; k++) {
                want |= (unsigned)(buf[j + k] < 0x21) << k;
                want_amp |= (unsigned)(buf[j + k] == 0x26) << k;
            }
            CHECK(hs_below_21_tail(buf, j, n, round & 1, &amp) == want && amp == want_amp,
                  "hs_below_21_tail j %d n %d back %d", j, n, round & 1);
        }
        /* hs_find_text_markup: the first '<' followed by '/' and ``first`` (any case; 0: any
           byte) or, with ``bang``, by '!', before the last two bytes, every start and length. */
        {
            static const unsigned char markup[] = {'<', '/', '!', 's', 'S', 't', 'a', ' ', 0x80};
            unsigned char text[64], first = (round % 3 == 0) ? 0 : (round % 3 == 1) ? 's' : 't';
            int start = round % 16, len = (round / 16) % 60, bang = (round / 3) & 1;
            const unsigned char* want = NULL;
            if (start + len > 64) len = 64 - start;
            for (k = 0; k < 64; k++) text[k] = markup[next_byte() % sizeof(markup)];
            for (k = start; k + 2 < start + len; k++) {
                if (text[k] == '<' && ((text[k + 1] == '/' && (!first || (text[k + 2] | 0x20) == first))
                                       || (bang && text[k + 1] == '!'))) {
                    want = text + k;
                    break;
                }
            }
            CHECK(hs_find_text_markup(text + start, text + start + len, first, bang) == want,
                  "hs_find_text_markup start %d len %d first %02x bang %d", start, len, first, bang);
        }
        /* hs_find_any: one of up to eight bytes in p[0..n), and whether a byte is 0x80 or
           above when none is, every start and length. */
        {
            unsigned char chars[8], table[256] = {0}, text[64];
            int nchars = 1 + round % 8, start = round % 16, len = (round / 16) % 48, want = 0;
            int want_high = 0, high = -1, found;
            for (k = 0; k < nchars; k++) {
                chars[k] = alphabet[next_byte() % sizeof(alphabet)];
                table[chars[k]] = 1;
            }
            for (k = 0; k < 64; k++) text[k] = (round & 32) ? buf[k] & 0x7F : buf[k];
            for (k = start; k < start + len; k++) {
                if (table[text[k]]) want = 1;
                if (text[k] >= 0x80) want_high = 1;
            }
            found = hs_find_any(text + start, len, chars, nchars, table, &high);
            CHECK(found == want && (found || high == want_high),
                  "hs_find_any start %d len %d chars %d", start, len, nchars);
        }
        /* hs_find_lt: the first '<' in [p, end), every start and length. */
        {
            static const unsigned char lt[] = {'<', '>', 'a', ' ', 0x80, 0x3B};
            unsigned char text[64];
            int start = round % 16, len = (round / 16) % 48;
            const unsigned char* want = NULL;
            for (k = 0; k < 64; k++) text[k] = lt[next_byte() % sizeof(lt)];
            if ((round & 3) == 0)     /* (often none, or only far in) */
                for (k = 0; k < start + 16 + (round / 4) % 32 && k < 64; k++)
                    if (text[k] == '<') text[k] = 'a';
            for (k = start; k < start + len; k++) if (text[k] == '<') { want = text + k; break; }
            CHECK(hs_find_lt(text + start, text + start + len) == want,
                  "hs_find_lt start %d len %d", start, len);
        }
        /* hs_plain_copy: how many bytes are plain (ASCII but NUL, '&', CR), those copied. */
        {
            static const unsigned char plain[] = {'a', '/', 'Z', ' ', '&', '\r', 0x00, 0x80, 0xFF,
                                                  0x7F, 0x01, 0x25, 0x27, 0x0C, 0x0E};
            unsigned char src[64], dst[64];
            int len = round % 64, want = 0;
            ptrdiff_t got;
            for (k = 0; k < 64; k++) {
                /* (mostly plain bytes, so that long plain runs are tried) */
                unsigned r = next_byte();
                src[k] = (r % 23 == 0) ? plain[4 + (r / 23) % (sizeof(plain) - 4)]
                                       : plain[r % 4];
                dst[k] = 0xAA;
            }
            while (want < len && src[want] != 0 && src[want] != '&' && src[want] != '\r'
                   && src[want] < 0x80)
                want++;
            got = hs_plain_copy(src, len, dst);
            CHECK(got == want, "hs_plain_copy len %d: %d, want %d", len, (int)got, want);
            for (k = 0; k < want; k++) CHECK(dst[k] == src[k], "hs_plain_copy copy at %d", k);
            /* (nothing written past the run: its last sixteen bytes are stored over) */
            for (k = len; k < 64; k++) CHECK(dst[k] == 0xAA, "hs_plain_copy wrote at %d", k);
        }
    }
    printf("ok\n");
    return 0;
}
