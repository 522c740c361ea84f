# cython: language_level=3
"""The engine's compiler- and machine-specific C (builtins, SSE2, word loads) with portable
fallbacks, selected at compile time in ``hs_portable.h`` (``HTMLSTREAM_PORTABLE`` forces the
fallbacks: ``make check-portable``)."""
from libc.stdint cimport uint64_t


cdef extern from "hs_portable.h" nogil:
    const int PORTABLE_BUILD "HS_PORTABLE_BUILD"
    const bint FREE_THREADED "HS_FREE_THREADED"
    uint64_t load_le64 "hs_load_le64"(const unsigned char* p) noexcept
    int ctz64 "hs_ctz64"(uint64_t m) noexcept
    int ctz32 "hs_ctz32"(unsigned m) noexcept
    const unsigned char* find_byte "hs_find_byte"(const unsigned char* p,
                                                  const unsigned char* end,
                                                  unsigned char c) noexcept
    const unsigned char* find_lt "hs_find_lt"(const unsigned char* p,
                                              const unsigned char* end) noexcept
    Py_ssize_t plain_copy "hs_plain_copy"(const unsigned char* p, Py_ssize_t n,
                                          unsigned char* d) noexcept
    unsigned below_21 "hs_below_21"(const unsigned char* p, unsigned* amp) noexcept
    unsigned below_21_tail "hs_below_21_tail"(const unsigned char* v, Py_ssize_t j, Py_ssize_t n,
                                              bint back, unsigned* amp) noexcept
    const unsigned char* find_text_markup "hs_find_text_markup"(const unsigned char* p,
                                                                const unsigned char* end,
                                                                unsigned char first,
                                                                bint bang) noexcept
    bint find_any "hs_find_any"(const unsigned char* p, Py_ssize_t n, const unsigned char* chars,
                                int k, const unsigned char* table, int* high) noexcept
