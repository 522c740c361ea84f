# Constants the engine's modules share, defined once here (cimported; no module of its own).
from libc.stdint cimport uint64_t

from htmlstream._engine.taghash cimport hash_update


# Text types: the tokenizer state a text token was read in (as htmlstream.TextType, the
# public enum, whose values these are).
cdef enum TextType:
    DATA = 0
    RCDATA = 1
    RAWTEXT = 2
    SCRIPT_DATA = 3
    PLAINTEXT = 4
    CDATA_SECTION = 5


# The tree builder makes an HTML <image> start tag an <img> element: the tag-name hashes of
# both (taghash.pxd; the C compiler folds them to constants).
cdef extern from *:
    """
    #define HS_IMG_HASH \
        hs_hash_update(hs_hash_update(hs_hash_update(HS_EMPTY_HASH, 'i'), 'm'), 'g')
    #define HS_IMAGE_HASH hs_hash_update(hs_hash_update(hs_hash_update(hs_hash_update( \
        hs_hash_update(HS_EMPTY_HASH, 'i'), 'm'), 'a'), 'g'), 'e')
    """
    uint64_t IMG_HASH "HS_IMG_HASH"
    uint64_t IMAGE_HASH "HS_IMAGE_HASH"


# The elements the tree builder implies and merges start tags into.
cdef extern from *:
    """
    #define HS_HTML_HASH hs_hash_update(hs_hash_update(hs_hash_update(hs_hash_update( \
        HS_EMPTY_HASH, 'h'), 't'), 'm'), 'l')
    #define HS_HEAD_HASH hs_hash_update(hs_hash_update(hs_hash_update(hs_hash_update( \
        HS_EMPTY_HASH, 'h'), 'e'), 'a'), 'd')
    #define HS_BODY_HASH hs_hash_update(hs_hash_update(hs_hash_update(hs_hash_update( \
        HS_EMPTY_HASH, 'b'), 'o'), 'd'), 'y')
    """
    uint64_t HTML_HASH "HS_HTML_HASH"
    uint64_t HEAD_HASH "HS_HEAD_HASH"
    uint64_t BODY_HASH "HS_BODY_HASH"
