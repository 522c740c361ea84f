# cython: language_level=3
"""Selector matching on the open-element stack, in one forward pass.

A complex selector ``A > B C + D`` is a chain of states, one per compound, read left to right.
When an element matches a state's compound, the next state becomes *pending* where the
combinator says the next compound must be found: for the element's descendants (`` ``), its
children (``>``), its next element sibling (``+``) or all its later siblings (``~``).  An
element is only ever tested against the first compounds indexed under its tag name, id, classes
or attribute names, and the states its ancestors and earlier siblings left pending: the cost does
not grow with selectors that cannot match it.

Arguments of ``:not()``, ``:is()``, ``:where()`` and ``:nth-child(An+B of S)`` are compiled as
further chains whose last state sets a *flag* on the element instead of matching a rule; they
sit one nesting level deeper and are decided first, so the compound that reads the flag knows it.

Data layout (all of it C, nothing allocated for an element that matches nothing):

* :class:`Program`: states, compounds, attribute tests and pseudo-classes are arrays of structs;
  the entry index is open-addressing hash tables (tag hash; tag names that do not hash; ids;
  classes; lower-case attribute names) in front of which 64-bit and 256-bit Bloom filters
  answer "no" for the common element in a few instructions.
* :class:`Matcher`: a frame per open element (an array of structs) and five integer stacks.
  The states pending for an element's children, next sibling and later siblings are ranges of
  the ``child``, ``adj`` and ``gen`` stacks that grow and shrink with the open-element stack.
  A descendant state stays pending for the whole subtree, so it is pushed once, on the
  ``desc`` stack, by the outermost element that made it pending (``desc_owner``); deeper
  elements that make it pending again add nothing, and every element walks the distinct
  active descendant states once: descendant matching is linear in the depth.
* Attribute values are read in place, in the document's bytes, when they hold no character
  reference; otherwise (and in multi-byte legacy encodings) the decoded text is compared.
"""

cimport cython
from cpython.mem cimport PyMem_Calloc, PyMem_Free, PyMem_Malloc, PyMem_Realloc
from libc.stdint cimport uint64_t
from libc.string cimport memchr, memcmp, memcpy, memset

from htmlstream._engine.ascii cimport ascii_lower, ascii_lower_equals, low_bytes, lower, name_word
from htmlstream._engine.lexer cimport AttrRec, Lexer, TagRec
from htmlstream._engine.portable cimport below_21, below_21_tail, ctz32, load_le64
from htmlstream._engine.taghash cimport EMPTY_HASH, INVALID_HASH, hash_bytes

from htmlstream import selectors as _sel
from htmlstream.charrefs import decode_charrefs

# Kinds of a pending state's combinator.
cdef enum:
    C_DESC = 0
    C_CHILD = 1
    C_ADJ = 2
    C_GEN = 3

# Attribute operators.
cdef enum:
    A_EXISTS = 0
    A_EQUALS = 1
    A_INCLUDES = 2
    A_DASH = 3
    A_PREFIX = 4
    A_SUFFIX = 5
    A_SUBSTRING = 6

# Case modes of attribute value comparison.
cdef enum:
    CASE_SENSITIVE = 0
    CASE_INSENSITIVE = 1
    CASE_HTML = 2           # insensitive on HTML elements (HTML's list of such attributes)

# Pseudo-class kinds.
cdef enum:
    P_NTH_CHILD = 0
    P_NTH_OF_TYPE = 1
    P_ROOT = 2
    P_NOT = 3
    P_IS = 4
    P_NS = 5                # the element's namespace is one of mask ``a`` (1 HTML, 2 SVG, 4 MathML)

# Attributes whose values HTML compares ASCII case-insensitively in selectors (HTML §4.16.2).
HTML_CASE_INSENSITIVE_ATTRIBUTES = frozenset("""
accept accept-charset align alink axis bgcolor charset checked clear codetype color compact
declare defer dir direction disabled enctype face frame hreflang http-equiv lang language link
media method multiple nohref noresize noshade nowrap readonly rel rev rules scope scrolling
selected shape target text type valign valuetype vlink""".split())

# SVG element names the HTML parser gives mixed case (tree construction, "adjust SVG tag names").
SVG_TAG_NAMES = {name.lower(): name for name in """
altGlyph altGlyphDef altGlyphItem animateColor animateMotion animateTransform clipPath feBlend
feColorMatrix feComponentTransfer feComposite feConvolveMatrix feDiffuseLighting
feDisplacementMap feDistantLight feDropShadow feFlood feFuncA feFuncB feFuncG feFuncR
feGaussianBlur feImage feMerge feMergeNode feMorphology feOffset fePointLight
feSpecularLighting feSpotLight feTile feTurbulence foreignObject glyphRef linearGradient
radialGradient textPath""".split()}

# Attribute names the HTML parser gives mixed case on SVG elements ("adjust SVG attributes") and
# on MathML elements ("adjust MathML attributes"); every other name is lower-case there.
SVG_ATTRIBUTE_NAMES = {name.lower(): name for name in """
attributeName attributeType baseFrequency baseProfile calcMode clipPathUnits diffuseConstant
edgeMode filterUnits glyphRef gradientTransform gradientUnits kernelMatrix kernelUnitLength
keyPoints keySplines keyTimes lengthAdjust limitingConeAngle markerHeight markerUnits
markerWidth maskContentUnits maskUnits numOctaves pathLength patternContentUnits
patternTransform patternUnits pointsAtX pointsAtY pointsAtZ preserveAlpha preserveAspectRatio
primitiveUnits refX refY repeatCount repeatDur requiredExtensions requiredFeatures
specularConstant specularExponent spreadMethod startOffset stdDeviation stitchTiles
surfaceScale systemLanguage tableValues targetX targetY textLength viewBox viewTarget
xChannelSelector yChannelSelector zoomAndPan""".split()}
MATHML_ATTRIBUTE_NAMES = {"definitionurl": "definitionURL"}

# Attributes the HTML parser puts in a namespace on SVG and MathML elements ("adjust foreign
# attributes"): source name -> (namespace, local name).  Every other attribute, and these on
# HTML elements, are in no namespace.
FOREIGN_ATTRIBUTES = {
    **{f"xlink:{local}": (_sel.XLINK_NAMESPACE, local) for local in
       ("actuate", "arcrole", "href", "role", "show", "title", "type")},
    "xml:lang": (_sel.XML_NAMESPACE, "lang"),
    "xml:space": (_sel.XML_NAMESPACE, "space"),
    "xmlns": (_sel.XMLNS_NAMESPACE, "xmlns"),
    "xmlns:xlink": (_sel.XMLNS_NAMESPACE, "xlink"),
}
_FOREIGN_BY_NAME = {value: name for name, value in FOREIGN_ATTRIBUTES.items()}
_FOREIGN_BY_LOCAL = {local: name for name, (_, local) in FOREIGN_ATTRIBUTES.items()}
# element namespace URI -> its bit in a P_NS mask (the ``ns`` the simulator gives, as a bit)
_NS_BITS = {_sel.HTML_NAMESPACE: 1, _sel.SVG_NAMESPACE: 2, _sel.MATHML_NAMESPACE: 4}

_COMBINATORS = {
    _sel.Combinator.DESCENDANT: C_DESC,
    _sel.Combinator.CHILD: C_CHILD,
    _sel.Combinator.ADJACENT: C_ADJ,
    _sel.Combinator.GENERAL_SIBLING: C_GEN,
}
_OPS = {
    _sel.AttrOp.EXISTS: A_EXISTS,
    _sel.AttrOp.EQUALS: A_EQUALS,
    _sel.AttrOp.INCLUDES: A_INCLUDES,
    _sel.AttrOp.DASH_MATCH: A_DASH,
    _sel.AttrOp.PREFIX: A_PREFIX,
    _sel.AttrOp.SUFFIX: A_SUFFIX,
    _sel.AttrOp.SUBSTRING: A_SUBSTRING,
}

_HTML_WS = " \t\n\f\r"


# --------------------------------------------------------------------------------------------
# C helpers
# --------------------------------------------------------------------------------------------

cdef inline uint64_t fnv1a(const unsigned char* p, Py_ssize_t n) noexcept:
    cdef uint64_t h = 14695981039346656037ULL
    cdef Py_ssize_t i
    for i in range(n):
        h = (h ^ p[i]) * 1099511628211ULL
    return h


cdef inline uint64_t fnv1a_lower(const unsigned char* p, Py_ssize_t n) noexcept:
    """FNV-1a of p[:n] ASCII-lower-cased."""
    cdef uint64_t h = 14695981039346656037ULL
    cdef Py_ssize_t i
    for i in range(n):
        h = (h ^ lower(p[i])) * 1099511628211ULL
    return h


cdef inline uint64_t mix(uint64_t h) noexcept:
    """Spread a key over the table's slots (tag hashes have their entropy in the low bits)."""
    h ^= h >> 29
    h *= 0xBF58476D1CE4E5B9ULL
    h ^= h >> 32
    return h


cdef inline void bloom_add(uint64_t* bloom, uint64_t h) noexcept:
    h = mix(h)
    bloom[(h & 255) >> 6] |= (<uint64_t>1) << (h & 63)
    bloom[((h >> 8) & 255) >> 6] |= (<uint64_t>1) << ((h >> 8) & 63)


cdef inline bint bloom_has(const uint64_t* bloom, uint64_t h) noexcept:
    h = mix(h)
    return ((bloom[(h & 255) >> 6] >> (h & 63)) & 1) and \
        ((bloom[((h >> 8) & 255) >> 6] >> ((h >> 8) & 63)) & 1)


cdef inline bint is_id_name(const unsigned char* nm) noexcept:
    """Whether the two-byte attribute name at ``nm`` is "id" in any case."""
    return (nm[0] | 0x20) == 0x69 and (nm[1] | 0x20) == 0x64


cdef inline bint is_class_name(const unsigned char* nm) noexcept:
    """Whether the five-byte attribute name at ``nm`` is "class" in any case (OR 0x20
    lower-cases a letter and maps no other byte to a lower-case letter; byte by byte, so that
    "style", "title"... stop at once)."""
    return (nm[0] | 0x20) == 0x63 and (nm[1] | 0x20) == 0x6C and (nm[2] | 0x20) == 0x61 and \
        (nm[3] | 0x20) == 0x73 and (nm[4] | 0x20) == 0x73


cdef inline bint same(const unsigned char* p, const unsigned char* q, Py_ssize_t n,
                      bint insensitive) noexcept:
    """p[:n] == q[:n]; with ``insensitive`` p is ASCII-lower-cased first (q is lower-case)."""
    if not insensitive:
        return memcmp(p, q, n) == 0
    return ascii_lower_equals(p, q, n)


cdef inline bint _simple_test(Program prog, const CCompound* c, Lexer lx, TagRec* tag,
                              int ns) noexcept:
    """Whether the element of ``tag`` (NULL: implied) in namespace ``ns`` matches the simple
    compound ``c`` of a tag already compared: its namespace fits and it has every attribute
    name ``c`` tests (see Matcher._match_simple)."""
    cdef const CAttrTest* t
    cdef const CAttrTest* t_end
    cdef const unsigned char* d
    cdef const AttrRec* a
    cdef const AttrRec* a_end
    cdef Py_ssize_t readable
    cdef unsigned long long low
    if ns != 0 and not (c.svg_ok if ns == 1 else c.math_ok):
        return False
    if c.n_attrs == 0:
        return True
    # (an implied element has no attributes; after the input ended there is no tag to read)
    if tag == NULL or lx.data == NULL:
        return False
    d = lx.data - lx.base
    readable = lx.base + lx.data_len - 8        # (a name starting here or before: one word)
    t = &prog.c_attrs[c.attr_first]
    t_end = t + c.n_attrs
    a_end = tag.attrs + tag.n_attrs
    while t < t_end:
        if ns != 0 and not (t.svg_ok if ns == 1 else t.math_ok):
            return False
        a = tag.attrs
        low = low_bytes(t.lname_len) if t.lname_len <= 8 else 0
        while a < a_end:
            if a.name_end - a.name_start == t.lname_len:
                if low and a.name_start <= readable:
                    if (load_le64(d + a.name_start) & low) | t.lname_mask == t.lname_word:
                        break
                elif ascii_lower_equals(d + a.name_start, t.lname, t.lname_len):
                    break
            a += 1
        if a == a_end:
            return False
        t += 1
    return True


cdef const Slot* table_find(const Table* t, uint64_t key, const unsigned char* kb,
                            Py_ssize_t kn, bint lower) noexcept:
    """The slot of ``key`` (a tag hash when ``kb`` is NULL, else FNV-1a of kb[:kn], which
    is compared, ASCII-lower-cased first with ``lower``), or NULL."""
    cdef Py_ssize_t i
    cdef const Slot* s
    if t.slots == NULL:
        return NULL
    i = <Py_ssize_t>(mix(key) & <uint64_t>t.mask)
    while True:
        s = &t.slots[i]
        if s.key_len < 0:
            return NULL
        if s.key == key:
            if kb == NULL:
                if s.key_bytes == NULL:
                    return s
            elif s.key_bytes != NULL and s.key_len == kn and same(kb, s.key_bytes, kn, lower):
                return s
        i = (i + 1) & t.mask


cdef inline uint64_t bits_of(uint64_t h) noexcept:
    """The two bits a class name of FNV-1a ``h`` sets in an element's class Bloom filter."""
    h = mix(h)
    return ((<uint64_t>1) << (h & 63)) | ((<uint64_t>1) << ((h >> 6) & 63))


cdef inline uint64_t token_bits(const unsigned char* p, Py_ssize_t n) noexcept:
    return bits_of(fnv1a(p, n))


cdef inline bint plain_value(const unsigned char* p, Py_ssize_t n) noexcept:
    """No character reference, CR or NUL: the raw bytes are the value."""
    return n == 0 or (memchr(p, 0x26, n) == NULL and memchr(p, 0x0D, n) == NULL
                      and memchr(p, 0, n) == NULL)


cdef inline bint is_html_ws(unsigned char c) noexcept:
    return c == 0x20 or c == 0x09 or c == 0x0A or c == 0x0C or c == 0x0D


cdef inline Py_ssize_t token_end(const unsigned char* v, Py_ssize_t vn,
                                 Py_ssize_t* start) noexcept:
    """Skip HTML whitespace from ``start[0]`` (updated); return the end of the token there."""
    cdef Py_ssize_t j = start[0]
    while j < vn and is_html_ws(v[j]):
        j += 1
    start[0] = j
    while j < vn and not is_html_ws(v[j]):
        j += 1
    return j


cdef bint raw_matches(int op, const unsigned char* v, Py_ssize_t vn, const unsigned char* w,
                      Py_ssize_t wn, bint insensitive) noexcept:
    """A raw attribute value v[:vn] against the selector's value w[:wn], in place."""
    cdef Py_ssize_t j, k
    cdef unsigned char c, up
    cdef const unsigned char* p
    cdef const unsigned char* q
    if op == A_EQUALS:
        return vn == wn and same(v, w, wn, insensitive)
    if op == A_PREFIX:
        return vn >= wn and same(v, w, wn, insensitive)
    if op == A_SUFFIX:
        return vn >= wn and same(v + vn - wn, w, wn, insensitive)
    if op == A_DASH:
        return (vn == wn and same(v, w, wn, insensitive)) or (
            vn > wn and v[wn] == 0x2D and same(v, w, wn, insensitive))
    if op == A_SUBSTRING:
        if wn == 0 or vn < wn:
            return wn == 0
        # (where the first byte is: memchr, for both cases of an insensitive letter)
        c = w[0]
        up = c - 32 if insensitive and 0x61 <= c <= 0x7A else c
        j = 0
        while j <= vn - wn:
            p = <const unsigned char*>memchr(v + j, c, vn - wn + 1 - j)
            if up != c:
                q = <const unsigned char*>memchr(v + j, up, vn - wn + 1 - j)
                if q != NULL and (p == NULL or q < p):
                    p = q
            if p == NULL:
                return False
            j = p - v
            if same(v + j, w, wn, insensitive):
                return True
            j += 1
        return False
    if op == A_INCLUDES:
        j = 0
        while j < vn:
            k = token_end(v, vn, &j)
            if k - j == wn and same(v + j, w, wn, insensitive):
                return True
            j = k
        return False
    return True


cdef inline bint ascii_prefix_differs(const unsigned char* v, Py_ssize_t vn,
                                      const unsigned char* w, Py_ssize_t wn,
                                      bint insensitive) noexcept:
    """Whether the ASCII bytes that start the raw value v already differ from w (so that the
    decoded value cannot start with w either: ASCII other than '&', CR and NUL decodes to
    itself).  Stops, answering no, at the first byte that is not plain ASCII."""
    cdef Py_ssize_t j
    cdef unsigned char c
    for j in range(vn if vn < wn else wn):
        c = v[j]
        if c >= 0x80 or c == 0x26 or c == 0x0D or c == 0:
            return False
        if insensitive:
            c = lower(c)
        if c != w[j]:
            return True
    return False


cdef bint str_matches(int op, str actual, str wanted):
    if op == A_EQUALS:
        return actual == wanted
    if op == A_PREFIX:
        return actual.startswith(wanted)
    if op == A_SUFFIX:
        return actual.endswith(wanted)
    if op == A_SUBSTRING:
        return wanted in actual
    if op == A_DASH:
        return actual == wanted or actual.startswith(wanted + "-")
    if op == A_INCLUDES:
        return wanted in split_html_ws(actual)
    return True


cdef list split_html_ws(str value):
    """``value`` split on HTML whitespace (str.split() would also split on other spaces)."""
    return [token for token in value.replace("\t", " ").replace("\n", " ").replace(
        "\f", " ").replace("\r", " ").split(" ") if token]


cdef inline bint nth_matches(long a, long b, Py_ssize_t index) noexcept:
    """Whether index (1-based) is a*n + b for some n >= 0."""
    cdef long diff = <long>index - b
    if a == 0:
        return diff == 0
    if (diff > 0 and a < 0) or (diff < 0 and a > 0):
        return False
    return diff % a == 0


cdef void* grow(void* p, Py_ssize_t* cap, Py_ssize_t need, Py_ssize_t item) except? NULL:
    """Reallocate ``p`` (``cap[0]`` items of ``item`` bytes) to hold at least ``need``."""
    cdef Py_ssize_t n = cap[0] * 2 if cap[0] > 0 else 16
    cdef void* q
    while n < need:
        n *= 2
    q = PyMem_Realloc(p, n * item)
    if q == NULL:
        raise MemoryError()
    cap[0] = n
    return q


cdef inline int ipush(IntStack* s, int v) except -1:
    if s.n == s.cap:
        s.data = <int*>grow(s.data, &s.cap, s.n + 1, sizeof(int))
    s.data[s.n] = v
    s.n += 1
    return 0


cdef int* int_array(Py_ssize_t n, int fill) except NULL:
    cdef int* p = <int*>PyMem_Malloc((n if n > 0 else 1) * sizeof(int))
    cdef Py_ssize_t i
    if p == NULL:
        raise MemoryError()
    for i in range(n if n > 0 else 1):
        p[i] = fill
    return p


# --------------------------------------------------------------------------------------------
# Program
# --------------------------------------------------------------------------------------------

cdef class Program:
    """Selectors compiled for matching; built once per Rewriter (and encoding) and shared by its
    streams.  The same selectors compiled for two encodings have the same states, flags and
    rules, numbered alike (a stream switches programs at a ``<meta charset>``)."""

    def __cinit__(self):
        self.c_states = NULL
        self.c_compounds = NULL
        self.c_attrs = NULL
        self.c_pseudos = NULL
        self.entries = NULL
        self.any_entries = NULL
        self.nth_types = NULL
        self.flag_counted = NULL
        self.c_next = NULL
        memset(&self.by_hash, 0, sizeof(Table))
        memset(&self.by_name, 0, sizeof(Table))
        memset(&self.by_id, 0, sizeof(Table))
        memset(&self.by_class, 0, sizeof(Table))
        memset(&self.by_attr, 0, sizeof(Table))
        memset(&self.by_attrv, 0, sizeof(Table))
        memset(&self.by_attrv_all, 0, sizeof(Table))

    def __dealloc__(self):
        PyMem_Free(self.c_states)
        PyMem_Free(self.c_compounds)
        PyMem_Free(self.c_attrs)
        PyMem_Free(self.c_pseudos)
        PyMem_Free(self.entries)
        PyMem_Free(self.any_entries)
        PyMem_Free(self.nth_types)
        PyMem_Free(self.flag_counted)
        PyMem_Free(self.c_next)
        PyMem_Free(self.by_hash.slots)
        PyMem_Free(self.by_name.slots)
        PyMem_Free(self.by_id.slots)
        PyMem_Free(self.by_class.slots)
        PyMem_Free(self.by_attr.slots)
        PyMem_Free(self.by_attrv.slots)
        PyMem_Free(self.by_attrv_all.slots)

    def __init__(self, list rules, str encoding="utf-8", bint index_compounds=True):
        """``rules``: one parsed ``SelectorList`` per rule, in registration order.
        ``index_compounds``: build ``compound_index`` when the rewriter's lazy mirror can use
        it (false for that index itself)."""
        self.states = []
        self.compound_specs = []
        self.entry_by_hash = {}
        self.entry_by_name = {}
        self.entry_any = []
        self.entry_by_id = {}
        self.entry_by_class = {}
        self.entry_by_attr = {}
        self.entry_by_attrv = {}
        self.entry_by_attrv_all = {}
        self._shared = {}
        self.next_extra = {}
        self.names = []
        self.attr_py = []
        self.keep = []
        self.attr_index = False
        self.of_flags = set()
        self.n_flags = 0
        self.needs_frames = False
        self.n_rules = len(rules)
        self.nested = False
        self.uses_nth_of_type = False
        self.nth_of_type_all = False
        self.uses_nth_child = False
        self.sibling_combinators = False
        self.positional = False
        self.chain_compounds = []
        self.encoding = encoding
        self.utf8 = encoding.replace("_", "-").lower() in ("utf-8", "utf8")
        self.raw_values = self.utf8 or _byte_exact(encoding)
        nth_types = set()
        for rule_id, selector_list in enumerate(rules):
            self._add_list(selector_list, rule_id, 0, nth_types)
        self.n_states = len(self.states)
        self.levels = [st[4] for st in self.states]
        self.max_level = max(self.levels, default=0)
        self._build(nth_types)
        self.of_counts = bool(self.of_flags)
        self.positional = self.sibling_combinators or self.uses_nth_child or \
            self.uses_nth_of_type
        self.compound_index = None
        if index_compounds and self.needs_frames:
            self.compound_index = Program([_sel.SelectorList(tuple(
                _sel.ComplexSelector((compound,))
                for compound in dict.fromkeys(self.chain_compounds)))], encoding, False)
            if self.of_counts and self.compound_index.n_any:
                # (every element would be tried, and matched again by the replay when it
                # matches S: the exact replay is cheaper)
                self.compound_index = None
        self.chain_compounds = None

    # ---------------------------------------------------------------- compiling

    def _add_list(self, selector_list, int target, int level, set nth_types):
        """Add the chains of ``selector_list``; their compiled compounds, per selector."""
        return [self._add_complex(complex_sel, target, level, nth_types)
                for complex_sel in selector_list.selectors]

    def _new_flag(self, selector_list, int level, set nth_types):
        flag = self.n_flags
        self.n_flags += 1
        self.nested = True
        self.needs_frames = True     # flags are decided in the full pass
        compiled = self._add_list(selector_list, -flag - 1, level + 1, nth_types)
        return flag, compiled

    def _add_complex(self, complex_sel, int target, int level, set nth_types):
        compounds = complex_sel.compounds
        combinators = complex_sel.combinators
        n = len(compounds)
        # (every compound, the arguments' too: an element that can match none of them changes
        # no state, at any level)
        self.chain_compounds.extend(compounds)
        # Compile the compounds first: their arguments (:not, :is...) add states of their own,
        # and this chain's states must be consecutive.
        # Chains that start with the same compound and combinator share their first state (a
        # state can have several next states): ``ul > li.a``, ``ul > li.b`` test ``ul`` once.
        # Not when the compound has arguments (their flags would be computed for nothing).
        key = None
        if n > 1 and not any(isinstance(p, (_sel.Not, _sel.Is, _sel.Where)) or (
                isinstance(p, _sel.NthChild) and p.of is not None) for p in compounds[0].pseudos
                ) and not any(a.namespace is None for a in compounds[0].attributes):
            key = (compounds[0], combinators[0], level)
            shared = self._shared.get(key)
            if shared is not None:
                compiled = [self._compile_compound(compound, level, nth_types)
                            for compound in compounds[1:]]
                first_id = len(self.states)
                self._add_states(compiled, combinators[1:], target, level)
                self.next_extra.setdefault(shared, []).append(first_id)
                return [self.states[shared][0]] + compiled
        # Compile the compounds first: their arguments (:not, :is...) add states of their own,
        # and this chain's states must be consecutive.
        compiled = [self._compile_compound(compound, level, nth_types) for compound in compounds]
        first_id = len(self.states)
        self._add_states(compiled, combinators, target, level)
        if key is not None:
            self._shared[key] = first_id
        spec = self.compound_specs[compiled[0]]
        if not spec["never"]:           # (one that can never match is no entry at all)
            keys = self._entry_keys(spec)
            if keys is None:
                self.entry_any.append(first_id)
            for kind, k in keys or ():
                if kind == "hash":
                    index = self.entry_by_hash
                elif kind == "name":
                    index = self.entry_by_name
                else:
                    self.attr_index = True
                    index = {"id": self.entry_by_id, "class": self.entry_by_class,
                             "attr": self.entry_by_attr, "attrv": self.entry_by_attrv,
                             "attrv_all": self.entry_by_attrv_all}[kind]
                ids = index.setdefault(k, [])
                if first_id not in ids:
                    ids.append(first_id)
        return compiled

    def _add_states(self, list compiled, combinators, int target, int level):
        """One state per compiled compound, consecutive, chained by ``combinators``."""
        first_id = len(self.states)
        n = len(compiled)
        for i in range(n):
            if i + 1 < n:
                self.needs_frames = True    # a combinator: states wait on the stack
                if combinators[i] in (_sel.Combinator.ADJACENT,
                                      _sel.Combinator.GENERAL_SIBLING):
                    self.sibling_combinators = True
                self.states.append((compiled[i], first_id + i + 1,
                                    _COMBINATORS[combinators[i]], 0, level))
            else:
                self.states.append((compiled[i], -1, C_DESC, target, level))

    def _entry_keys(self, dict spec):
        """Where a first compound is indexed: [(kind, key)] for what an element must have (one
        of) for it to match, or None (tried on every element)."""
        keys = self._entry_key(spec["ast"], spec)
        if keys is not None:
            return keys
        # :is(a, b) and :where(a, b) of single compounds: one of theirs
        for args in spec["is_args"]:
            if args is None:
                continue
            keys = []
            for arg in args:
                if arg["never"]:
                    continue
                more = self._entry_keys(arg)
                if more is None:
                    break
                keys += [k for k in more if k not in keys]
            else:
                return keys
        return None

    def _entry_key(self, compound, dict spec):
        """The most selective key of the compound itself: an id, a class, an attribute with
        the first character of its value, the tag, an attribute name; or None.  A key is only
        used when every element that can match has it in the form looked up (ids and classes:
        their bytes in the document, and UTF-8 for decoded values; attribute names:
        ASCII-lower-cased bytes)."""
        for kind, values in (("id", compound.ids), ("class", compound.classes)):
            for value in values:
                if "\ufffd" in value:
                    continue
                keys = [(kind, value.encode("utf-8"))]
                try:
                    raw = value.encode(self.encoding)
                except UnicodeEncodeError:
                    raw = None
                if raw is not None and (kind, raw) not in keys:
                    keys.append((kind, raw))
                return keys
        if self.raw_values:
            for test in spec["attrs"]:
                # [a=v], [a^=v], [a|=v]: the value starts with v's first character
                value = test["value"]
                if test["lname"] is None or not test["raw_ok"] or not value or \
                        test["op"] not in (A_EQUALS, A_PREFIX, A_DASH) or \
                        not value[0].isascii() or len(test["lname"]) > 200:
                    continue
                firsts = {value[0]}
                if test["case"] != CASE_SENSITIVE:
                    firsts |= {value[0].lower(), value[0].upper()}
                return [("attrv_all", test["lname"])] + [
                    ("attrv", test["lname"] + b"\0" + ch.encode("ascii")) for ch in sorted(firsts)]
        # The tag before an attribute name (a[href]): a tag hash is known without the tag's
        # attributes and costs one probe, while a name index makes every tag with attributes
        # have its names hashed (may_match_attributes, for the rewriter's lazy mirror).
        if spec["tag_hash"] != EMPTY_HASH:
            return [("hash", spec["tag_hash"])]
        for test in spec["attrs"]:
            if test["lname"] is not None:
                return [("attr", test["lname"])]
        if spec["name"] is not None and not spec["name_decoded"]:
            return [("name", spec["name"])]
        return None

    def _encode(self, str value):
        try:
            return value.encode(self.encoding)
        except UnicodeEncodeError:
            return None

    def _compile_compound(self, compound, int level, set nth_types):
        spec = {"tag_hash": EMPTY_HASH, "name": None, "name_decoded": False, "never": False,
                "svg_ok": True, "math_ok": True, "attrs": [], "pseudos": [], "ast": compound,
                "is_args": []}
        if compound.tag is not None:
            # Type selectors: ASCII case-insensitive on HTML elements, exact on SVG and MathML
            # elements, whose names the parser gives in their canonical case.
            lower = ascii_lower(compound.tag)
            spec["svg_ok"] = compound.tag == SVG_TAG_NAMES.get(lower, lower)
            spec["math_ok"] = compound.tag == lower
            if lower.isascii():
                name = lower.encode("ascii")
                h = hash_bytes(name, len(name))
                if h == INVALID_HASH:
                    spec["name"] = name
                else:
                    spec["tag_hash"] = h
            elif self.raw_values and "\ufffd" not in lower:
                # the lexer's bytes, ASCII-lower-cased, are compared (exact in UTF-8 and in
                # encodings of one byte per character)
                name = self._encode(lower)
                if name is None:
                    spec["never"] = True    # not a character of the document's encoding
                else:
                    spec["name"] = name
            else:
                spec["name"] = lower
                spec["name_decoded"] = True
        for ident in compound.ids:
            self._attr_test(spec, "id", A_EQUALS, ident, CASE_SENSITIVE)
        for cls in compound.classes:
            self._attr_test(spec, "class", A_INCLUDES, cls, CASE_SENSITIVE)
        # the namespaces the element may be in (bits of _NS_BITS): a namespaced type selector,
        # or an attribute only SVG and MathML elements have in a namespace
        ns_mask = 7 if compound.namespace is None else _NS_BITS.get(compound.namespace, 0)
        pseudos = list(compound.pseudos)
        for attr in compound.attributes:
            op = _OPS[attr.op]
            if attr.case is _sel.CaseFlag.INSENSITIVE:
                case = CASE_INSENSITIVE
            elif attr.case is _sel.CaseFlag.SENSITIVE:
                case = CASE_SENSITIVE
            elif ascii_lower(attr.name) in HTML_CASE_INSENSITIVE_ATTRIBUTES:
                case = CASE_HTML
            else:
                case = CASE_SENSITIVE
            if attr.namespace == "":
                self._attr_test(spec, attr.name, op, attr.value, case)
            elif attr.namespace is None:
                # [*|a]: `a` in no namespace, or the foreign attribute whose local name is `a`
                # (local names compare case-sensitively: they are on SVG/MathML elements only)
                foreign = _FOREIGN_BY_LOCAL.get(attr.name)
                if foreign is None or foreign == attr.name:
                    self._attr_test(spec, attr.name, op, attr.value, case, foreign is not None)
                else:       # [*|href]: :is([|href], [xlink|href])
                    pseudos.append(_sel.Is(_sel.SelectorList(tuple(
                        _sel.ComplexSelector((_sel.Compound(attributes=(
                            _sel.AttributeSelector(attr.name, attr.op, attr.value, attr.case, ns),
                        )),)) for ns in ("", FOREIGN_ATTRIBUTES[foreign][0])))))
            else:
                foreign = _FOREIGN_BY_NAME.get((attr.namespace, attr.name))
                if foreign is None:
                    spec["never"] = True    # no attribute of an HTML document is in it
                else:
                    self._attr_test(spec, foreign, op, attr.value, case, True)
                    ns_mask &= 6
        if ns_mask == 0:
            spec["never"] = True
        spec["svg_ok"] = spec["svg_ok"] and ns_mask & 2 != 0
        spec["math_ok"] = spec["math_ok"] and ns_mask & 4 != 0
        if not ns_mask & 1:
            spec["pseudos"].append((P_NS, ns_mask, 0, -1))
        for pseudo in pseudos:
            if isinstance(pseudo, _sel.NthChild):
                flag = -1
                if pseudo.of is not None:
                    flag = self._new_flag(pseudo.of, level, nth_types)[0]
                    self.of_flags.add(flag)
                spec["pseudos"].append((P_NTH_CHILD, pseudo.a, pseudo.b, flag))
                self.needs_frames = True
                self.uses_nth_child = True
            elif isinstance(pseudo, _sel.NthOfType):
                self.uses_nth_of_type = True
                if spec["tag_hash"] != EMPTY_HASH:
                    nth_types.add(spec["tag_hash"])
                else:
                    self.nth_of_type_all = True
                spec["pseudos"].append((P_NTH_OF_TYPE, pseudo.a, pseudo.b, -1))
                self.needs_frames = True
            elif isinstance(pseudo, _sel.Root):
                spec["pseudos"].append((P_ROOT, 0, 0, -1))
            elif isinstance(pseudo, _sel.Not):
                spec["pseudos"].append((P_NOT, 0, 0, self._new_flag(pseudo.arg, level,
                                                                      nth_types)[0]))
            elif isinstance(pseudo, (_sel.Is, _sel.Where)):
                flag, compiled = self._new_flag(pseudo.arg, level, nth_types)
                spec["pseudos"].append((P_IS, 0, 0, flag))
                spec["is_args"].append(
                    [self.compound_specs[c[0]] for c in compiled]
                    if all(len(c) == 1 for c in compiled) else None)
            else:
                raise TypeError(f"unsupported pseudo-class {pseudo!r}")
        self.compound_specs.append(spec)
        return len(self.compound_specs) - 1

    def _attr_test(self, dict spec, str name, int op, value, int case, bint foreign=False):
        """A test of attribute ``name`` in no namespace (``foreign``: the source name of the
        foreign attribute an SVG or MathML element has in a namespace, which it also is)."""
        lower_name = ascii_lower(name)
        # (on SVG and MathML elements a name the parser puts in a namespace is not in none)
        no_ns = foreign or lower_name not in FOREIGN_ATTRIBUTES
        test = {"name": lower_name, "op": op, "case": case, "value": value,
                "lower": None if value is None else ascii_lower(value),
                "svg_ok": no_ns and name == SVG_ATTRIBUTE_NAMES.get(lower_name, lower_name),
                "math_ok": no_ns and name == MATHML_ATTRIBUTE_NAMES.get(lower_name, lower_name),
                "lname": None, "vbytes": None, "lbytes": None,
                "raw_ok": self.raw_values and (value is None or "\ufffd" not in value)}
        if op != A_EXISTS:
            # CSS: an empty operand of ^= $= *= matches nothing; ~= never matches "" or spaces.
            if op in (A_PREFIX, A_SUFFIX, A_SUBSTRING) and not value:
                spec["never"] = True
            if op == A_INCLUDES and (not value or any(ch in _HTML_WS for ch in value)):
                spec["never"] = True
            test["vbytes"] = self._encode(value)
            test["lbytes"] = self._encode(test["lower"])
        if lower_name.isascii():
            test["lname"] = lower_name.encode("ascii")
        elif self.raw_values and "\ufffd" not in lower_name:
            test["lname"] = self._encode(lower_name)
            if test["lname"] is None:
                spec["never"] = True        # no attribute of the document has this name
        spec["attrs"].append(test)

    # ---------------------------------------------------------------- the C form

    def _keep(self, bytes b):
        self.keep.append(b)
        return b

    def _build(self, set nth_types):
        cdef Py_ssize_t n_attrs = sum(len(s["attrs"]) for s in self.compound_specs)
        cdef Py_ssize_t n_pseudos = sum(len(s["pseudos"]) for s in self.compound_specs)
        cdef Py_ssize_t i, ai = 0, pi = 0
        cdef CCompound* c
        cdef CAttrTest* t
        cdef CPseudo* p
        cdef bytes b
        self.c_states = <CState*>PyMem_Malloc(max(self.n_states, 1) * sizeof(CState))
        self.c_compounds = <CCompound*>PyMem_Malloc(
            max(len(self.compound_specs), 1) * sizeof(CCompound))
        self.c_attrs = <CAttrTest*>PyMem_Malloc(max(n_attrs, 1) * sizeof(CAttrTest))
        self.c_pseudos = <CPseudo*>PyMem_Malloc(max(n_pseudos, 1) * sizeof(CPseudo))
        if (self.c_states == NULL or self.c_compounds == NULL or self.c_attrs == NULL
                or self.c_pseudos == NULL):
            raise MemoryError()
        nexts = [([] if st[1] < 0 else [st[1]]) + self.next_extra.get(i, [])
                 for i, st in enumerate(self.states)]
        self.c_next = int_array(sum(len(x) for x in nexts), 0)
        pos = 0
        for i, (compound, next_state, combinator, target, level) in enumerate(self.states):
            self.c_states[i].next_start = pos
            self.c_states[i].next_n = len(nexts[i])
            for nxt in nexts[i]:
                self.c_next[pos] = nxt
                pos += 1
            self.c_states[i].compound = compound
            self.c_states[i].tag_hash = self.compound_specs[compound]["tag_hash"]
            self.c_states[i].needs_attrs = len(self.compound_specs[compound]["attrs"]) > 0
            self.c_states[i].never = self.compound_specs[compound]["never"]
            h = self.compound_specs[compound]["tag_hash"]
            self.c_states[i].tag_bit = ~(<uint64_t>0) if h == EMPTY_HASH else \
                (<uint64_t>1) << (<uint64_t>h & 63)
            self.c_states[i].next_state = next_state
            self.c_states[i].combinator = combinator
            self.c_states[i].target = target
            self.c_states[i].level = level
        for i, spec in enumerate(self.compound_specs):
            c = &self.c_compounds[i]
            c.tag_hash = spec["tag_hash"]
            c.name_index = -1
            if spec["name"] is not None:
                c.name_index = len(self.names)
                self.names.append(spec["name"])
            c.name_decoded = spec["name_decoded"]
            c.never = spec["never"]
            c.svg_ok = spec["svg_ok"]
            c.math_ok = spec["math_ok"]
            c.attr_first = ai
            c.n_attrs = len(spec["attrs"])
            for test in spec["attrs"]:
                t = &self.c_attrs[ai]
                t.lname = NULL
                t.lname_len = 0
                t.lname_word = 0
                t.lname_mask = 0
                if test["lname"] is not None:
                    b = self._keep(test["lname"])
                    t.lname = <const unsigned char*><const char*>b
                    t.lname_len = len(b)
                    name_word(t.lname, t.lname_len, &t.lname_word, &t.lname_mask)
                t.value = NULL
                t.lower = NULL
                t.value_len = 0
                if test["vbytes"] is not None and test["lbytes"] is not None \
                        and len(test["vbytes"]) == len(test["lbytes"]):
                    b = self._keep(test["vbytes"])
                    t.value = <const unsigned char*><const char*>b
                    t.value_len = len(b)
                    b = self._keep(test["lbytes"])
                    t.lower = <const unsigned char*><const char*>b
                t.op = test["op"]
                t.case = test["case"]
                t.svg_ok = test["svg_ok"]
                t.math_ok = test["math_ok"]
                t.raw_ok = test["raw_ok"] and (test["op"] == A_EXISTS or t.value != NULL
                                               or test["vbytes"] is None)
                t.class_token = (t.raw_ok and t.value != NULL and test["op"] == A_INCLUDES
                                 and test["case"] == CASE_SENSITIVE
                                 and test["lname"] == b"class")
                t.token_bits = token_bits(t.value, t.value_len) if t.class_token else 0
                t.py_index = len(self.attr_py)
                self.attr_py.append((test["name"], test["value"], test["lower"]))
                ai += 1
            c.pseudo_first = pi
            c.n_pseudos = len(spec["pseudos"])
            for kind, a, b_, flag in spec["pseudos"]:
                self.c_pseudos[pi].kind = kind
                self.c_pseudos[pi].a = a
                self.c_pseudos[pi].b = b_
                self.c_pseudos[pi].flag = flag
                pi += 1
        for i in range(self.n_states):
            c = &self.c_compounds[self.c_states[i].compound]
            self.c_states[i].is_flag = -1
            self.c_states[i].not_flag = -1
            self.c_states[i].min_child = 0
            for pi in range(c.pseudo_first + c.n_pseudos - 1, c.pseudo_first - 1, -1):
                p = &self.c_pseudos[pi]
                if p.kind == P_IS:
                    self.c_states[i].is_flag = p.flag
                elif p.kind == P_NOT:
                    self.c_states[i].not_flag = p.flag
                elif (p.kind == P_NTH_OF_TYPE or p.flag < 0 and p.kind == P_NTH_CHILD) and \
                        p.a >= 0 and p.b > self.c_states[i].min_child:
                    # An+B with A >= 0 is at least B; the element counts among the children,
                    # so a bound of 1 is no bound
                    self.c_states[i].min_child = p.b if p.b > 1 else 0
            # (a type selector, one :is() and one :not() are all _rejects() needs to decide)
            self.c_states[i].trivial = not c.never and c.name_index < 0 and c.svg_ok and \
                c.math_ok and c.n_attrs == 0 and all(
                    (self.c_pseudos[pi].kind == P_IS and
                     self.c_pseudos[pi].flag == self.c_states[i].is_flag) or
                    (self.c_pseudos[pi].kind == P_NOT and
                     self.c_pseudos[pi].flag == self.c_states[i].not_flag)
                    for pi in range(c.pseudo_first, c.pseudo_first + c.n_pseudos))
            self.c_states[i].class_bits = 0
            for ai in range(c.attr_first, c.attr_first + c.n_attrs):
                if self.c_attrs[ai].class_token:
                    self.c_states[i].class_bits = self.c_attrs[ai].token_bits
                    break
            self.c_states[i].cls_key = self.c_states[i].class_bits or ~(<uint64_t>0)
        # the entry index
        n_entries = sum(sum(len(v) for v in index.values()) for index in (
            self.entry_by_hash, self.entry_by_name, self.entry_by_id, self.entry_by_class,
            self.entry_by_attr, self.entry_by_attrv, self.entry_by_attrv_all))
        self.entries = int_array(n_entries, 0)
        self.any_entries = int_array(len(self.entry_any), 0)
        self.n_any = len(self.entry_any)
        for i, s in enumerate(self.entry_any):
            self.any_entries[i] = s
        pos = 0
        self.hash_filter = 0
        pos = self._fill(&self.by_hash, self.entry_by_hash, pos, True)
        for key in self.entry_by_hash:
            self.hash_filter |= (<uint64_t>1) << (<uint64_t>key & 63)
        pos = self._fill(&self.by_name, self.entry_by_name, pos, False)
        self.name_lengths = _length_mask(self.entry_by_name)
        pos = self._fill(&self.by_id, self.entry_by_id, pos, False)
        pos = self._fill(&self.by_class, self.entry_by_class, pos, False)
        pos = self._fill(&self.by_attr, self.entry_by_attr, pos, False)
        pos = self._fill(&self.by_attrv, self.entry_by_attrv, pos, False)
        pos = self._fill(&self.by_attrv_all, self.entry_by_attrv_all, pos, False)
        self.attr_len_mask = _length_mask(self.entry_by_attr)
        self.attrv_len_mask = _length_mask(self.entry_by_attrv_all)
        memset(self.attrv_first, 0, sizeof(self.attrv_first))
        for key in self.entry_by_attrv:
            self.attrv_first[key[-1] >> 6] |= (<uint64_t>1) << (key[-1] & 63)
        self.id_len_mask = _length_mask(self.entry_by_id)
        # an ASCII first byte other than '&', CR and NUL is the decoded value's first character
        memset(self.id_first, 0, sizeof(self.id_first))
        firsts = {key[0] for key in self.entry_by_id} | {0x26, 0x0D, 0} | set(range(0x80, 0x100))
        for c0 in firsts:
            self.id_first[c0 >> 6] |= (<uint64_t>1) << (c0 & 63)
        self.class_len_mask = _length_mask(self.entry_by_class)
        self.cls_hash_mask = self.class_len_mask
        for i in range(n_attrs):
            if self.c_attrs[i].class_token:
                self.cls_hash_mask |= (<uint64_t>1) << min(self.c_attrs[i].value_len, 63)
        self.scan_len_mask = self.attr_len_mask | self.attrv_len_mask
        if self.by_id.n:
            self.scan_len_mask |= 1 << 2
        if self.cls_hash_mask:
            self.scan_len_mask |= 1 << 5
        self.n_nth_types = len(nth_types)
        self.nth_types = <uint64_t*>PyMem_Malloc(max(len(nth_types), 1) * sizeof(uint64_t))
        if self.nth_types == NULL:
            raise MemoryError()
        self.nth_filter = 0
        for i, h in enumerate(sorted(nth_types)):
            self.nth_types[i] = h
            self.nth_filter |= (<uint64_t>1) << (<uint64_t>h & 63)
        self.flag_counted = int_array(self.n_flags, 0)
        for flag in self.of_flags:
            self.flag_counted[flag] = 1
        self.simple_n = self.n_states if self._all_simple() else 0

    def _all_simple(self):
        """Whether every state can be matched by Matcher._match_simple: no frames, flags,
        selectors tried on every element or attribute index; each state a whole selector (first
        and last compound, level 0, a rule's) of a tag name that hashes and attribute names
        tested for existence, indexed by that tag; at most eight of them."""
        cdef const CState* st
        cdef const CCompound* c
        cdef const CAttrTest* t
        cdef Py_ssize_t i, ai
        if (self.n_states == 0 or self.n_states > 8 or self.needs_frames or self.n_flags
                or self.n_any or self.attr_index or self.entry_by_name or self.entry_by_id
                or self.entry_by_class or self.entry_by_attrv_all):
            return False
        for i in range(self.n_states):
            st = &self.c_states[i]
            c = &self.c_compounds[st.compound]
            if (st.level or st.next_state >= 0 or st.next_n or st.target < 0 or c.never
                    or c.tag_hash == EMPTY_HASH or c.tag_hash == INVALID_HASH
                    or c.name_index >= 0 or c.n_pseudos
                    or i not in self.entry_by_hash.get(c.tag_hash, ())):
                return False
            for ai in range(c.attr_first, c.attr_first + c.n_attrs):
                t = &self.c_attrs[ai]
                if t.op != A_EXISTS or t.lname == NULL or t.class_token:
                    return False
        return True

    cdef Py_ssize_t _fill(self, Table* t, dict index, Py_ssize_t pos, bint hashes) except -1:
        """Build table ``t`` from ``index`` (key -> [state id]); entries from ``pos`` on."""
        cdef Py_ssize_t cap = 8
        cdef Py_ssize_t i
        cdef uint64_t key
        cdef bytes b
        cdef Slot* s
        while cap < 2 * len(index):
            cap *= 2
        t.slots = <Slot*>PyMem_Malloc(cap * sizeof(Slot))
        if t.slots == NULL:
            raise MemoryError()
        for i in range(cap):
            t.slots[i].key_len = -1
        t.mask = cap - 1
        t.n = len(index)
        for k, states in index.items():
            if hashes:
                key = k
                b = None
            else:
                b = self._keep(k)
                key = fnv1a(<const unsigned char*><const char*>b, len(b))
            bloom_add(t.bloom, key)
            i = <Py_ssize_t>(mix(key) & <uint64_t>t.mask)
            while t.slots[i].key_len >= 0:
                i = (i + 1) & t.mask
            s = &t.slots[i]
            s.key = key
            s.key_bytes = NULL if b is None else <const unsigned char*><const char*>b
            s.key_len = 0 if b is None else len(b)
            s.start = pos
            s.count = len(states)
            for st in states:
                self.entries[pos] = st
                pos += 1
        return pos

    @property
    def compounds(self):
        """The compiled compounds (one dict each), for inspection."""
        return list(self.compound_specs)

    # ---------------------------------------------------------------- the rewriter's lazy mirror
    # Without frames (no combinator, no structural or logical pseudo-class) an element's match
    # depends on the element alone, and on its depth for :root: the rewriter then follows the
    # open elements only where it has work left, and asks whether an element may match at all
    # (may_match, matcher.pxd).  With frames, it asks the same of ``compound_index``.

    cdef bint may_match_indexed(self, Lexer lx, TagRec* tag, uint64_t name_hash) noexcept:
        """may_match() (matcher.pxd) past its one-word filter."""
        cdef const unsigned char* nb
        cdef Py_ssize_t n
        if self.n_any:
            return True
        if name_hash != INVALID_HASH:
            # (the name first: one probe, where the attributes are a scan)
            if (self.hash_filter & ((<uint64_t>1) << (name_hash & 63))) and \
                    table_find(&self.by_hash, name_hash, NULL, 0, False) != NULL:
                return True
            return self.attr_index and tag.n_attrs and self.may_match_attributes(lx, tag)
        if self.attr_index and tag.n_attrs and self.may_match_attributes(lx, tag):
            return True
        if not self.by_name.n:
            return False
        n = tag.name_end - tag.name_start
        if not self.name_lengths & ((<uint64_t>1) << (n if n < 63 else 63)):
            return False
        nb = lx.data + (tag.name_start - lx.base)
        return table_find(&self.by_name, fnv1a_lower(nb, n), nb, n, True) != NULL

    cdef bint may_match_attributes(self, Lexer lx, TagRec* tag) noexcept:
        """Whether some first compound indexed by an attribute (an id, a class, an attribute
        name) may be tried on the tag: it has an attribute of a name some key has (by the
        names' Bloom filters: a false positive only costs the exact match), or an id or class
        attribute when ids or classes are keys.  The names alone, no value: cheap enough to
        let the lazy mirror skip the tags whose attributes no selector names."""
        cdef const unsigned char* d = lx.data - lx.base
        cdef const unsigned char* nm
        cdef Py_ssize_t i, n
        cdef uint64_t bit, h
        for i in range(tag.n_attrs):
            n = tag.attrs[i].name_end - tag.attrs[i].name_start
            bit = (<uint64_t>1) << (n if n < 63 else 63)
            if not (self.scan_len_mask & bit):
                continue
            nm = d + tag.attrs[i].name_start
            if n == 2 and self.by_id.n and is_id_name(nm):
                return True
            if n == 5 and self.cls_hash_mask and is_class_name(nm):
                return True
            if (self.attr_len_mask | self.attrv_len_mask) & bit:
                h = fnv1a_lower(nm, n)
                if bloom_has(self.by_attr.bloom, h) or bloom_has(self.by_attrv_all.bloom, h):
                    return True
        return False


cdef uint64_t _length_mask(keys):
    """Bit min(len, 63) set for the length of every key."""
    cdef uint64_t mask = 0
    for key in keys:
        mask |= (<uint64_t>1) << min(len(key), 63)
    return mask


def _byte_exact(str encoding):
    """Whether ``encoding`` has one byte per character, every byte decoding to a distinct
    character, ASCII bytes to themselves and no other byte to ASCII: then raw bytes compare
    (and ASCII-lower-case) as the characters they decode to."""
    try:
        chars = bytes(range(256)).decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return False
    return (len(chars) == 256 and len(set(chars)) == 256
            and chars[:128] == bytes(range(128)).decode("ascii")
            and all(ord(ch) >= 128 for ch in chars[128:]))


# --------------------------------------------------------------------------------------------
# Matcher
# --------------------------------------------------------------------------------------------

cdef class SavedFrame:
    """An open frame taken out of the stack with its pending states (see "Stack surgery")."""


cdef SavedFrame _empty_frame():
    """A frame for an element that was not matched: nothing pending, no children yet."""
    cdef SavedFrame sf = SavedFrame()
    memset(&sf.f, 0, sizeof(CFrame))
    sf.staged = []
    sf.child = []
    sf.adj = []
    sf.gen = []
    sf.ofs = []
    sf.types = []
    return sf


@cython.no_gc     # (its object fields hold its Program, str and int: no cycle goes through it)
cdef class Matcher:
    """Per-document matching state: a frame per open element."""

    def __cinit__(self):
        self.frames = NULL
        self.types = NULL
        self.stamp = NULL
        self.pend_stamp = NULL
        self.adj_pos = NULL
        self.gen_pos = NULL
        self.desc_owner = NULL
        self.flag_stamp = NULL
        self.rule_stamp = NULL
        self.cands = NULL
        self.hi = NULL
        self.matched = NULL
        self.stage_desc = NULL
        self.stage_child = NULL
        self.stage_dup = NULL
        self.dstamp = NULL
        memset(&self.desc, 0, sizeof(IntStack))
        memset(&self.dup, 0, sizeof(IntStack))
        memset(&self.child, 0, sizeof(IntStack))
        memset(&self.adj, 0, sizeof(IntStack))
        memset(&self.gen, 0, sizeof(IntStack))
        memset(&self.ofs, 0, sizeof(IntStack))

    def __dealloc__(self):
        PyMem_Free(self.frames)
        PyMem_Free(self.types)
        PyMem_Free(self.stamp)      # (the block of every per-state, per-flag, per-rule array)
        PyMem_Free(self.dstamp)
        PyMem_Free(self.desc.data)
        PyMem_Free(self.dup.data)
        PyMem_Free(self.child.data)
        PyMem_Free(self.adj.data)
        PyMem_Free(self.gen.data)
        PyMem_Free(self.ofs.data)

    def __init__(self, Program program):
        self.init(program)

    cdef int init(self, Program program) except -1:
        """What ``__init__`` does, callable from C on ``Matcher.__new__(Matcher)`` (a stream
        makes one: no argument tuple to parse)."""
        self.program = program
        # Room for the document's frame and two more (504 bytes: Python's small-block
        # allocator); push() grows it for programs that keep a frame per open element.
        self.frames_cap = 3
        self.frames = <CFrame*>PyMem_Malloc(self.frames_cap * sizeof(CFrame))
        if self.frames == NULL:
            raise MemoryError()
        memset(&self.frames[0], 0, sizeof(CFrame))
        self.n_frames = 1
        self.n_detached = 0
        self.types_cap = 0
        self.types_n = 0
        self.cap_states = -1
        self.serial = 0
        self.name_ids = None
        self.dvals = []
        self.dcap = 0
        return self._reserve()

    cdef int _reserve(self) except -1:
        """Size the per-state, per-flag and per-rule arrays for the program (a program for
        another encoding has the same numbers)."""
        cdef Program prog = self.program
        cdef Py_ssize_t ns = prog.n_states, nf = prog.n_flags, nr = prog.n_rules
        if ns == self.cap_states and nf == self.cap_flags and nr == self.cap_rules:
            return 0
        if self.cap_states >= 0 and (self.n_frames > 1 or self.desc.n):
            raise ValueError("the matcher's program changed shape while elements are open")
        PyMem_Free(self.stamp)
        self.stamp = NULL
        # One block for all of them (one allocation per stream, not 13), each at least one int
        # long as before; desc_owner starts at -1, the others at 0.
        cdef Py_ssize_t ms = max(ns, 1), mf = max(nf, 1), mr = max(nr, 1), i
        cdef int* block = <int*>PyMem_Calloc(10 * ms + mf + 2 * mr, sizeof(int))
        if block == NULL:
            self.cap_states = -1
            raise MemoryError()
        self.stamp = block
        self.pend_stamp = block + ms
        self.adj_pos = block + 2 * ms
        self.gen_pos = block + 3 * ms
        self.desc_owner = block + 4 * ms
        self.cands = block + 5 * ms
        self.hi = block + 6 * ms
        self.stage_desc = block + 7 * ms
        self.stage_child = block + 8 * ms
        self.stage_dup = block + 9 * ms
        self.flag_stamp = block + 10 * ms
        self.rule_stamp = self.flag_stamp + mf
        self.matched = self.rule_stamp + mr
        for i in range(ms):
            self.desc_owner[i] = -1
        self.cap_states = ns
        self.cap_flags = nf
        self.cap_rules = nr
        self.n_stage_desc = 0
        self.n_stage_child = 0
        self.n_stage_dup = 0
        return 0

    @property
    def depth(self):
        """Number of open elements."""
        return self.n_frames - 1 - self.n_detached

    cpdef list match_start_tag(self, Lexer lx, int ns, bint implied, uint64_t name_hash,
                               bytes name):
        """Match the element of the lexer's current tag (``implied``: an element with no tag)."""
        return self.match(lx, NULL if implied else &lx.tag, name_hash, name, ns)

    cdef list match(self, Lexer lx, TagRec* tag, uint64_t name_hash, bytes name, int ns):
        """The rule ids the element matches (sorted), or None.  Call push() next if it opens.
        ``name`` is the ASCII-lower-cased tag name when ``name_hash`` is INVALID_HASH."""
        cdef Py_ssize_t i
        if self.match_ids(lx, tag, name_hash, name, ns) == 0:
            return None
        return [self.matched[i] for i in range(self.n_matched)]

    cdef Py_ssize_t match_ids(self, Lexer lx, TagRec* tag, uint64_t name_hash, bytes name,
                              int ns) except -1:
        """match() without the list: how many rules the element matches, their ids sorted in
        ``matched`` until the next match (the rewriter's path, one list less per element)."""
        cdef Program prog = self.program
        cdef CFrame* parent
        cdef const Slot* slot
        cdef Py_ssize_t i
        cdef int lvl
        cdef const unsigned char* nb
        cdef const CState* st
        cdef bint no_attrs
        cdef Py_ssize_t n, k
        cdef int s
        cdef uint64_t bit
        if prog.n_states != self.cap_states or prog.n_flags != self.cap_flags:
            self._reserve()
        self.serial += 1
        if self.serial == 0x7FFFFFFF:
            self.serial = 1
            memset(self.stamp, 0, self.cap_states * sizeof(int))
            memset(self.pend_stamp, 0, self.cap_states * sizeof(int))
            memset(self.flag_stamp, 0, max(self.cap_flags, 1) * sizeof(int))
            memset(self.rule_stamp, 0, max(self.cap_rules, 1) * sizeof(int))
            memset(self.dstamp, 0, self.dcap * sizeof(int))
            self.cls_serial = 0
        if prog.simple_n:
            return self._match_simple(lx, tag, name_hash, ns)
        # (no window after the input ended: elements closed then have no tag to read)
        self.d = lx.data - lx.base if lx.data != NULL else NULL
        self.tag = tag
        self.n_cands = 0
        self.n_hi = 0
        self.n_matched = 0
        self.n_stage_desc = 0
        self.n_stage_child = 0
        self.n_stage_dup = 0
        self.stage_desc_mask = 0
        self.stage_child_mask = 0
        self.stage_child_cls = 0
        parent = &self.frames[self.n_frames - 1]
        if prog.needs_frames:
            parent.child_count += 1
            if prog.uses_nth_of_type and (prog.nth_of_type_all or (
                    prog.nth_filter & ((<uint64_t>1) << (name_hash & 63)))):
                self._count_type(parent, name_hash, name)
        if prog.n_states == 0:
            if prog.needs_frames:
                parent.adj_n = 0
            self.tag = NULL
            return 0

        # Candidate states: first compounds indexed by this element's tag, id, classes and
        # attribute names, those tried on every element, and what the stack left pending.
        if name_hash != INVALID_HASH:
            # a one-word filter on the hash spares the table probe for most tags
            if prog.hash_filter & ((<uint64_t>1) << (name_hash & 63)):
                slot = table_find(&prog.by_hash, name_hash, NULL, 0, False)
                if slot != NULL:
                    self._queue_entries(slot.start, slot.count)
        elif prog.by_name.n and name is not None:
            nb = <const unsigned char*><const char*>name
            slot = table_find(&prog.by_name, fnv1a(nb, len(name)), nb, len(name), False)
            if slot != NULL:
                self._queue_entries(slot.start, slot.count)
        if prog.n_any:
            self._queue_entries(-1, prog.n_any)
        if prog.attr_index and tag != NULL and tag.n_attrs:
            self._attribute_entries()
        no_attrs = tag == NULL or tag.n_attrs == 0
        if prog.needs_frames:
            # (64-bit masks of the pending states' tags and classes skip a range that cannot
            # match)
            bit = (<uint64_t>1) << (name_hash & 63)
            if not parent.light:
                if parent.child_n and parent.child_mask & bit and \
                        not self._no_class(parent.child_cls, no_attrs):
                    self._queue_range(&self.child, parent.child_start, parent.child_n)
                if parent.adj_n:
                    if parent.adj_mask & bit and not self._no_class(parent.adj_cls, no_attrs):
                        self._queue_range(&self.adj, parent.adj_start, parent.adj_n)
                    # the next sibling continues from what this element leaves (set while
                    # processing; the parent's adj range is the top of the stack)
                    self.adj.n = parent.adj_start
                    parent.adj_n = 0
                    parent.adj_mask = 0
                    parent.adj_cls = 0
                if parent.gen_n and parent.gen_mask & bit and \
                        not self._no_class(parent.gen_cls, no_attrs):
                    self._queue_range(&self.gen, parent.gen_start, parent.gen_n)
            if self.desc.n and parent.desc_mask & bit:
                self._queue_range(&self.desc, 0, self.desc.n)

        if self.n_cands or self.n_hi:
            # arguments of :not()/:is()... first, deepest first: the flags they set are read by
            # the compounds one level up; each pass keeps the candidates of the levels below
            lvl = prog.max_level
            n = self.n_hi
            while n:
                k = 0
                for i in range(n):
                    s = self.hi[i]
                    st = &prog.c_states[s]
                    if st.level != lvl:
                        self.hi[k] = s
                        k += 1
                    elif not self._rejects(st, name_hash, no_attrs, parent):
                        self._process(s, name_hash, name, ns)
                n = k
                lvl -= 1
            for i in range(self.n_cands):
                s = self.cands[i]
                if not self._rejects(&prog.c_states[s], name_hash, no_attrs, parent):
                    self._process(s, name_hash, name, ns)
        self.tag = NULL
        if self.n_matched > 1:
            self._sort_matched()
        return self.n_matched

    cdef Py_ssize_t _match_simple(self, Lexer lx, TagRec* tag, uint64_t name_hash,
                                  int ns) noexcept:
        """match_ids() for a program of simple states (Program._all_simple: ``a[href]``, each
        state a tag and attribute names that must be there): each state tested in turn, with
        none of the candidate queue's set-up.  The same result as the general path."""
        cdef const CState* st = self.program.c_states
        cdef const CState* end = st + self.program.simple_n
        cdef Py_ssize_t k
        cdef int r
        self.n_matched = 0
        while st < end:
            if st.tag_hash == name_hash and _simple_test(
                    self.program, &self.program.c_compounds[st.compound], lx, tag, ns):
                r = st.target
                for k in range(self.n_matched):
                    if self.matched[k] == r:
                        break
                else:
                    self.matched[self.n_matched] = r
                    self.n_matched += 1
            st += 1
        if self.n_matched > 1:
            self._sort_matched()
        return self.n_matched

    cdef void _sort_matched(self) noexcept:
        """Sort the matched rule ids."""
        cdef Py_ssize_t i, j
        cdef int r
        cdef int* m = self.matched
        for i in range(1, self.n_matched):
            r = m[i]
            j = i
            while j > 0 and m[j - 1] > r:
                m[j] = m[j - 1]
                j -= 1
            m[j] = r

    cdef inline void _queue_entries(self, int start, int count) noexcept:
        """Queue entries[start : start + count] (start -1: the entries tried on every element)
        as candidates: nested ones (arguments of :not()...) in ``hi``, the others in ``cands``."""
        cdef int* e = self.program.any_entries if start < 0 else self.program.entries + start
        cdef int i, s
        for i in range(count):
            s = e[i]
            if self.stamp[s] != self.serial:
                self.stamp[s] = self.serial
                if self.program.c_states[s].level:
                    self.hi[self.n_hi] = s
                    self.n_hi += 1
                else:
                    self.cands[self.n_cands] = s
                    self.n_cands += 1

    cdef inline void _queue_range(self, IntStack* st, Py_ssize_t start, Py_ssize_t n) noexcept:
        cdef Py_ssize_t i
        cdef int s
        for i in range(start, start + n):
            s = st.data[i]
            if self.stamp[s] != self.serial:
                self.stamp[s] = self.serial
                if self.program.c_states[s].level:
                    self.hi[self.n_hi] = s
                    self.n_hi += 1
                else:
                    self.cands[self.n_cands] = s
                    self.n_cands += 1

    cdef inline bint _rejects(self, const CState* st, uint64_t name_hash, bint no_attrs,
                              const CFrame* parent) noexcept:
        """A quick rejection of candidate ``st`` before its compound is tested: on the tag, the
        attributes, the flags its first :is() and :not() read, its first .c test (the element's
        class Bloom filter) and the position its :nth-child()/:nth-of-type() needs."""
        return (st.never or (st.tag_hash != EMPTY_HASH and st.tag_hash != name_hash)
                or (st.needs_attrs and no_attrs)
                or (st.is_flag >= 0 and self.flag_stamp[st.is_flag] != self.serial)
                or (st.not_flag >= 0 and self.flag_stamp[st.not_flag] == self.serial)
                or (st.min_child and parent.child_count < st.min_child)
                or (st.class_bits and self._lacks_class(st.class_bits)))

    cdef inline int _process(self, int s, uint64_t name_hash, bytes name, int ns) except -1:
        """Test candidate state ``s``; on a match, record its rule, set its flag or make the
        next states of its chain pending."""
        cdef const CState* st = &self.program.c_states[s]
        cdef Py_ssize_t j
        if not st.trivial and not self._test(&self.program.c_compounds[st.compound], name_hash,
                                             name, ns):
            return 0
        if st.next_state < 0:
            if st.target >= 0:
                if self.rule_stamp[st.target] != self.serial:
                    self.rule_stamp[st.target] = self.serial
                    self.matched[self.n_matched] = st.target
                    self.n_matched += 1
            else:
                self._set_flag(-st.target - 1)
            return 0
        for j in range(st.next_start, st.next_start + st.next_n):
            self._pend(st.combinator, self.program.c_next[j])
        return 0

    cdef inline int _pend(self, int combinator, int nxt) except -1:
        """Make state ``nxt`` pending where ``combinator`` says, for the current element."""
        cdef CFrame* parent
        cdef Py_ssize_t i
        # (a state has one predecessor, so one combinator: one stamp tells whether it is staged
        # for this element already; the parent's adj and gen ranges are the top of their stacks,
        # and a state's last position there tells whether it is in them)
        if combinator <= C_CHILD:
            if self.pend_stamp[nxt] == self.serial:
                return 0
            self.pend_stamp[nxt] = self.serial
            if combinator == C_CHILD:
                self.stage_child[self.n_stage_child] = nxt
                self.n_stage_child += 1
                self.stage_child_mask |= self.program.c_states[nxt].tag_bit
                self.stage_child_cls |= self.program.c_states[nxt].cls_key
            elif self.desc_owner[nxt] < 0:      # else an ancestor already has it pending
                self.stage_desc[self.n_stage_desc] = nxt
                self.n_stage_desc += 1
                self.stage_desc_mask |= self.program.c_states[nxt].tag_bit
            else:
                # remembered for the case that the ancestor leaves the stack while this element
                # stays open (see "Stack surgery")
                self.stage_dup[self.n_stage_dup] = nxt
                self.n_stage_dup += 1
            return 0
        parent = &self.frames[self.n_frames - 1]
        if parent.light:
            self._materialize(parent)
        parent.pend_top = self.n_frames - 1     # (its element children are matched with them)
        if combinator == C_ADJ:
            i = self.adj_pos[nxt]
            if parent.adj_start <= i < self.adj.n and self.adj.data[i] == nxt:
                return 0
            self.adj_pos[nxt] = <int>self.adj.n
            ipush(&self.adj, nxt)
            parent.adj_n += 1
            parent.adj_mask |= self.program.c_states[nxt].tag_bit
            parent.adj_cls |= self.program.c_states[nxt].cls_key
        else:
            i = self.gen_pos[nxt]
            if parent.gen_start <= i < self.gen.n and self.gen.data[i] == nxt:
                return 0
            self.gen_pos[nxt] = <int>self.gen.n
            ipush(&self.gen, nxt)
            parent.gen_n += 1
            parent.gen_mask |= self.program.c_states[nxt].tag_bit
            parent.gen_cls |= self.program.c_states[nxt].cls_key
        return 0

    cdef int _set_flag(self, int flag) except -1:
        """The element matches the argument of flag ``flag``; :nth-child(An+B of S) counts
        the siblings that match S, this element included."""
        cdef CFrame* parent
        cdef Py_ssize_t i
        if self.flag_stamp[flag] == self.serial:
            return 0
        self.flag_stamp[flag] = self.serial
        if not self.program.flag_counted[flag]:
            return 0
        if self.probing:
            self.probe_counted = True   # (probe: counted by the replay's own match)
            return 0
        parent = &self.frames[self.n_frames - 1]
        if parent.light:
            self._materialize(parent)
        parent.pend_top = self.n_frames - 1     # (its element children read its counts)
        for i in range(parent.of_start, parent.of_start + 2 * parent.of_n, 2):
            if self.ofs.data[i] == flag:
                self.ofs.data[i + 1] += 1
                return 0
        ipush(&self.ofs, flag)
        ipush(&self.ofs, 1)
        parent.of_n += 1
        return 0

    cdef int _count_type(self, CFrame* parent, uint64_t name_hash, bytes name) except -1:
        """Count the element among its parent's children of its type (for :nth-of-type)."""
        cdef Program prog = self.program
        cdef uint64_t key = name_hash
        cdef int kind = 0
        cdef Py_ssize_t i
        cdef TypeCount* tc
        if name_hash == INVALID_HASH:
            if not prog.nth_of_type_all or name is None:
                return 0
            if self.name_ids is None:
                self.name_ids = {}
            key = self.name_ids.setdefault(name, len(self.name_ids))
            kind = 1
        elif not prog.nth_of_type_all:
            for i in range(prog.n_nth_types):
                if prog.nth_types[i] == name_hash:
                    break
            else:
                return 0            # no :nth-of-type() compound can match this type
        if parent.light:
            self._materialize(parent)
        parent.pend_top = parent - self.frames     # (its element children read its counts)
        for i in range(parent.type_start, parent.type_start + parent.type_n):
            tc = &self.types[i]
            if tc.key == key and tc.kind == kind:
                tc.count += 1
                return 0
        if self.types_n == self.types_cap:
            self.types = <TypeCount*>grow(self.types, &self.types_cap, self.types_n + 1,
                                          sizeof(TypeCount))
        tc = &self.types[self.types_n]
        tc.key = key
        tc.kind = kind
        tc.count = 1
        self.types_n += 1
        parent.type_n += 1
        return 0

    cdef Py_ssize_t _type_count(self, CFrame* parent, uint64_t name_hash,
                                bytes name) except -1:
        cdef uint64_t key = name_hash
        cdef int kind = 0
        cdef Py_ssize_t i
        if name_hash == INVALID_HASH:
            if self.name_ids is None or name is None or name not in self.name_ids:
                return 0
            key = self.name_ids[name]
            kind = 1
        if parent.light:
            return 0
        for i in range(parent.type_start, parent.type_start + parent.type_n):
            if self.types[i].key == key and self.types[i].kind == kind:
                return self.types[i].count
        return 0

    cdef int _attribute_entries(self) except -1:
        """Queue the first compounds indexed by an id, class or attribute name of the current
        tag.  Only names of a length some key has are looked at, and a value's first byte is
        checked against the bytes [a=v] keys hold before any name is hashed: the attributes no
        selector names cost a few instructions."""
        cdef Program prog = self.program
        cdef TagRec* tag = self.tag
        cdef const unsigned char* d = self.d
        cdef const unsigned char* nm
        cdef const unsigned char* v
        cdef AttrRec* a
        cdef const Slot* slot
        cdef Py_ssize_t i, n, vn, j
        cdef uint64_t h, h2, bit
        cdef bint hashed, first_class, amp
        cdef unsigned char c0
        cdef unsigned char buf[256]
        if prog.cls_hash_mask and prog.raw_values:
            self.cls_bits = 0           # (no class attribute: cls_state 0, set below)
        for i in range(tag.n_attrs):
            a = &tag.attrs[i]
            n = a.name_end - a.name_start
            bit = (<uint64_t>1) << (n if n < 63 else 63)
            if not (prog.scan_len_mask & bit):
                continue
            nm = d + a.name_start
            hashed = False
            if prog.attr_len_mask & bit:
                h = fnv1a_lower(nm, n)
                hashed = True
                if bloom_has(prog.by_attr.bloom, h):
                    slot = table_find(&prog.by_attr, h, nm, n, True)
                    if slot != NULL:
                        self._queue_entries(slot.start, slot.count)
            if prog.attrv_len_mask & bit and n <= 200 and a.value_end > a.value_start >= 0:
                # [a=v], [a^=v], [a|=v] are indexed by the name and v's first character
                c0 = d[a.value_start]
                if c0 == 0x26 or c0 == 0x0D or c0 == 0:
                    # (the decoded value's first character is not known here: all of them)
                    if not hashed:
                        h = fnv1a_lower(nm, n)
                        hashed = True
                    if bloom_has(prog.by_attrv_all.bloom, h):
                        slot = table_find(&prog.by_attrv_all, h, nm, n, True)
                        if slot != NULL:
                            self._queue_entries(slot.start, slot.count)
                elif (prog.attrv_first[c0 >> 6] >> (c0 & 63)) & 1:
                    if not hashed:
                        h = fnv1a_lower(nm, n)
                        hashed = True
                    h2 = (h * 1099511628211ULL ^ c0) * 1099511628211ULL
                    if bloom_has(prog.by_attrv.bloom, h2):
                        for j in range(n):
                            buf[j] = lower(nm[j])
                        buf[n] = 0
                        buf[n + 1] = c0
                        slot = table_find(&prog.by_attrv, h2, buf, n + 2, False)
                        if slot != NULL:
                            self._queue_entries(slot.start, slot.count)
            if a.value_start < 0:
                continue
            v = d + a.value_start
            vn = a.value_end - a.value_start
            if n == 2:
                if not prog.by_id.n or not is_id_name(nm) or vn == 0:
                    continue
                if prog.raw_values:
                    if not (prog.id_first[v[0] >> 6] >> (v[0] & 63)) & 1:
                        continue            # (most ids: no key starts with their first byte)
                    # the raw bytes (a hit is a candidate, the test decides), hashed only when
                    # some id has their length; the decoded value too when the value has a
                    # character reference or CR (NUL cannot give an id that is a key)
                    if prog.id_len_mask & ((<uint64_t>1) << (vn if vn < 63 else 63)):
                        h = fnv1a(v, vn)
                        if bloom_has(prog.by_id.bloom, h):
                            slot = table_find(&prog.by_id, h, v, vn, False)
                            if slot != NULL:
                                self._queue_entries(slot.start, slot.count)
                    if memchr(v, 0x26, vn) == NULL and memchr(v, 0x0D, vn) == NULL:
                        continue
                self._decoded_entries(i, True)
            elif n == 5:
                if not prog.cls_hash_mask or not is_class_name(nm):
                    continue
                if prog.raw_values:
                    # the element's class Bloom filter for .c tests is made on the way (from
                    # the first class attribute); only a character reference can give other
                    # class tokens than the raw bytes have
                    first_class = self.cls_serial != self.serial
                    amp = self._scan_classes(v, vn, a.value_end - 16 >= tag.start, first_class,
                                             True)
                    if first_class:
                        self.cls_serial = self.serial
                        self.cls_state = 2 if amp else 1
                    if not amp:
                        continue
                self._decoded_entries(i, False)
        if prog.cls_hash_mask and prog.raw_values and self.cls_serial != self.serial:
            self.cls_serial = self.serial
            self.cls_state = 0
        return 0

    cdef bint _scan_classes(self, const unsigned char* v, Py_ssize_t vn, bint back, bint bits,
                            bint index) noexcept:
        """Split the class value v[:vn] on HTML whitespace, sixteen bytes at a time: its tokens
        of a length some class key or .c test has are hashed into ``cls_bits`` (``bits``) and
        looked up in the class index (``index``).  Whether the value has a '&'.  ``back``: the
        sixteen bytes that end at v + vn are in the tag."""
        cdef Py_ssize_t j = 0, ts = 0, p
        cdef unsigned m, a, amp = 0
        while j < vn:
            if j + 16 <= vn:
                m = below_21(v + j, &a)
            else:
                m = below_21_tail(v, j, vn, back, &a)
            amp |= a
            while m:
                p = j + ctz32(m)
                m &= m - 1
                if is_html_ws(v[p]):        # (other control bytes are part of a token)
                    if p > ts:
                        self._class_token(v + ts, p - ts, bits, index)
                    ts = p + 1
            j += 16
        if vn > ts:
            self._class_token(v + ts, vn - ts, bits, index)
        return amp != 0

    cdef inline void _class_token(self, const unsigned char* t, Py_ssize_t n, bint bits,
                                  bint index) noexcept:
        cdef uint64_t bit = (<uint64_t>1) << (n if n < 63 else 63)
        cdef uint64_t h
        cdef const Slot* slot
        if not (self.program.cls_hash_mask & bit):
            return
        h = fnv1a(t, n)
        if bits:
            self.cls_bits |= bits_of(h)
        if index and self.program.class_len_mask & bit and \
                bloom_has(self.program.by_class.bloom, h):
            slot = table_find(&self.program.by_class, h, t, n, False)
            if slot != NULL:
                self._queue_entries(slot.start, slot.count)

    cdef int _decoded_entries(self, Py_ssize_t i, bint is_id) except -1:
        """Queue the first compounds indexed by the decoded id or classes of attribute ``i``
        (a value with a character reference, or a document in a multi-byte encoding): the
        index holds every key in UTF-8 too."""
        cdef const Slot* slot
        cdef bytes key
        tokens = [self._decoded(i)] if is_id else split_html_ws(self._decoded(i))
        for token in tokens:
            key = (<str>token).encode("utf-8", "surrogatepass")
            slot = table_find(&self.program.by_id if is_id else &self.program.by_class,
                              fnv1a(<const unsigned char*><const char*>key, len(key)),
                              <const unsigned char*><const char*>key, len(key), False)
            if slot != NULL:
                self._queue_entries(slot.start, slot.count)
        return 0

    cdef int _test(self, const CCompound* c, uint64_t name_hash, bytes name, int ns) except -1:
        """Whether the current element matches compound ``c``."""
        cdef const CPseudo* p
        cdef CFrame* parent
        cdef Py_ssize_t i
        cdef int r
        if c.never:
            return False
        if ns != 0 and not (c.svg_ok if ns == 1 else c.math_ok):
            return False
        if c.tag_hash != EMPTY_HASH:
            if c.tag_hash != name_hash:
                return False
        elif c.name_index >= 0:
            if name_hash != INVALID_HASH:
                return False
            if c.name_decoded:
                if self.tag == NULL:
                    return False
                raw = (<const char*>self.d + self.tag.name_start)[
                    :self.tag.name_end - self.tag.name_start]
                if ascii_lower(raw.decode(self.program.encoding, "replace").replace(
                        "\0", "\ufffd")) != self.program.names[c.name_index]:
                    return False
            elif name is None or name != self.program.names[c.name_index]:
                return False
        if c.n_attrs:
            if self.tag == NULL:
                return False        # an implied element has no attributes
            for i in range(c.attr_first, c.attr_first + c.n_attrs):
                r = self._attr_test(&self.program.c_attrs[i], ns)
                if not r:
                    return False
        if c.n_pseudos:
            parent = &self.frames[self.n_frames - 1]
            for i in range(c.pseudo_first, c.pseudo_first + c.n_pseudos):
                p = &self.program.c_pseudos[i]
                if p.kind == P_NTH_CHILD:
                    if parent.child_count < 0:
                        return False        # the parent is not known (push_unknown)
                    if p.flag >= 0:
                        if self.flag_stamp[p.flag] != self.serial:
                            return False
                        if not nth_matches(p.a, p.b, self._of_count(parent, p.flag)):
                            return False
                    elif not nth_matches(p.a, p.b, parent.child_count):
                        return False
                elif p.kind == P_NTH_OF_TYPE:
                    if parent.child_count < 0:
                        return False
                    if not nth_matches(p.a, p.b, self._type_count(parent, name_hash, name)):
                        return False
                elif p.kind == P_ROOT:
                    if self.n_frames != 1:
                        return False
                elif p.kind == P_NOT:
                    if self.flag_stamp[p.flag] == self.serial:
                        return False
                elif p.kind == P_IS:
                    if self.flag_stamp[p.flag] != self.serial:
                        return False
                elif not (p.a >> ns) & 1:     # P_NS
                    return False
        return True

    cdef Py_ssize_t _of_count(self, CFrame* parent, int flag) noexcept:
        cdef Py_ssize_t i
        if parent.light:
            return 0
        for i in range(parent.of_start, parent.of_start + 2 * parent.of_n, 2):
            if self.ofs.data[i] == flag:
                return self.ofs.data[i + 1]
        return 0

    cdef int _attr_test(self, const CAttrTest* t, int ns) except -1:
        """Test the current tag's first attribute called like ``t``'s."""
        cdef TagRec* tag = self.tag
        cdef const unsigned char* d = self.d
        cdef const unsigned char* v
        cdef AttrRec* a
        cdef Py_ssize_t i, vn
        cdef bint insensitive
        if ns != 0 and not (t.svg_ok if ns == 1 else t.math_ok):
            return False        # the parser gives the name another case on this element
        if t.class_token:
            # the element's classes are hashed once, for all the .c tests it meets
            if self.cls_serial != self.serial:
                self._class_bits()
            if self.cls_state == 0 or (
                    self.cls_state == 1 and (self.cls_bits & t.token_bits) != t.token_bits):
                return False
        for i in range(tag.n_attrs):
            a = &tag.attrs[i]
            if t.lname != NULL:
                if a.name_end - a.name_start != t.lname_len or \
                        not same(d + a.name_start, t.lname, t.lname_len, True):
                    continue
            elif ascii_lower((<const char*>d + a.name_start)[:a.name_end - a.name_start].decode(
                    self.program.encoding, "replace").replace("\0", "\ufffd")) \
                    != self.program.attr_py[t.py_index][0]:
                continue
            if t.op == A_EXISTS:
                return True
            insensitive = t.case == CASE_INSENSITIVE or (t.case == CASE_HTML and ns == 0)
            if a.value_start < 0:
                v = d
                vn = 0
            else:
                v = d + a.value_start
                vn = a.value_end - a.value_start
            if t.raw_ok:
                if t.value != NULL and (t.op == A_EQUALS or t.op == A_PREFIX or
                                        t.op == A_DASH) and ascii_prefix_differs(
                        v, vn, t.lower if insensitive else t.value, t.value_len, insensitive):
                    return False        # (most values are told apart by their first bytes)
                if plain_value(v, vn):
                    if t.value == NULL:
                        return False    # the raw value has no character the selector's has
                    return raw_matches(t.op, v, vn, t.lower if insensitive else t.value,
                                       t.value_len, insensitive)
            return self._decoded_test(t, i, ns)
        return False

    cdef inline bint _no_class(self, uint64_t cls, bint no_attrs) noexcept:
        """Whether every state of a range whose cls_key ORed is ``cls`` certainly fails on the
        element's classes: each has a .c test, and no bit of theirs is in the element's class
        Bloom filter."""
        if cls == ~(<uint64_t>0):
            return False
        if no_attrs:
            return True
        if self.cls_serial != self.serial:
            self._class_bits()
        return self.cls_state == 0 or (self.cls_state == 1 and (self.cls_bits & cls) == 0)

    cdef inline bint _lacks_class(self, uint64_t bits) noexcept:
        """Whether the current element certainly has not every class whose token_bits are
        ``bits`` (it has attributes)."""
        if self.cls_serial != self.serial:
            self._class_bits()
        return self.cls_state == 0 or (self.cls_state == 1 and (self.cls_bits & bits) != bits)

    cdef void _class_bits(self) noexcept:
        """Hash the current element's classes into ``cls_bits`` (``cls_state`` 1), unless its
        class attribute has a character reference (2) or there is none (0)."""
        cdef TagRec* tag = self.tag
        cdef const unsigned char* d = self.d
        cdef AttrRec* a
        cdef Py_ssize_t i
        self.cls_serial = self.serial
        self.cls_state = 0
        self.cls_bits = 0
        for i in range(tag.n_attrs):
            a = &tag.attrs[i]
            if a.name_end - a.name_start == 5 and same(d + a.name_start,
                                                       <const unsigned char*>b"class", 5, True):
                break
        else:
            return
        self.cls_state = 1
        if a.value_start < 0:
            return
        # (CR and NUL do not change which tokens a class test sees)
        if self._scan_classes(d + a.value_start, a.value_end - a.value_start,
                              a.value_end - 16 >= tag.start, True, False):
            self.cls_state = 2

    cdef int _decoded_test(self, const CAttrTest* t, Py_ssize_t i, int ns) except -1:
        """Compare attribute ``i``'s decoded value with ``t``'s."""
        cdef str actual = self._decoded(i)
        _, value, lower = self.program.attr_py[t.py_index]
        if t.case == CASE_INSENSITIVE or (t.case == CASE_HTML and ns == 0):
            return str_matches(t.op, ascii_lower(actual), lower)
        return str_matches(t.op, actual, value)

    cdef str _decoded(self, Py_ssize_t i):
        """Attribute ``i``'s value decoded (encoding, newlines, character references, NUL),
        as a handler reads it; computed once per element."""
        cdef AttrRec* a = &self.tag.attrs[i]
        cdef str value
        if i >= self.dcap:
            self.dstamp = <int*>grow(self.dstamp, &self.dcap, i + 1, sizeof(int))
            memset(self.dstamp, 0, self.dcap * sizeof(int))
            while len(self.dvals) < self.dcap:
                self.dvals.append(None)
        if self.dstamp[i] == self.serial:
            return self.dvals[i]
        if a.value_start < 0:
            value = ""
        else:
            value = (<const char*>self.d + a.value_start)[
                :a.value_end - a.value_start].decode(self.program.encoding, "replace")
            if "\r" in value:
                value = value.replace("\r\n", "\n").replace("\r", "\n")
            if "&" in value:
                value = decode_charrefs(value, in_attribute=True)
            if "\0" in value:
                value = value.replace("\0", "\ufffd")
        self.dvals[i] = value
        self.dstamp[i] = self.serial
        return value

    cpdef int push(self) except -1:
        """Open a frame for the element just matched (its name and namespace are not needed:
        what its descendants and siblings are matched against is in the pending states)."""
        cdef CFrame* f
        cdef Py_ssize_t top
        if not self.program.needs_frames:
            self.n_frames += 1
            return 0
        if self.n_frames == self.frames_cap:
            self.frames = <CFrame*>grow(self.frames, &self.frames_cap, self.n_frames + 1,
                                        sizeof(CFrame))
        top = self.n_frames
        f = &self.frames[top]
        f.detached = False
        f.child_count = 0
        f.desc_mask = self.frames[top - 1].desc_mask | self.stage_desc_mask
        self.n_frames = top + 1
        if self.n_stage_desc or self.n_stage_child or self.n_stage_dup:
            f.pend_top = top
            self._materialize(f)
            f.child_n = self.n_stage_child
            f.child_mask = self.stage_child_mask
            f.child_cls = self.stage_child_cls
            self._push_staged(top)
        else:
            f.pend_top = self.frames[top - 1].pend_top
            f.light = True      # (most elements: their ranges are set up when first used)
        return 0

    cdef void _materialize(self, CFrame* f) noexcept:
        """Set up the ranges of the innermost frame ``f``, all empty, at the stacks' tops."""
        f.light = False
        f.desc_start = self.desc.n
        f.dup_start = self.dup.n
        f.child_start = self.child.n
        f.child_n = 0
        f.adj_start = self.adj.n
        f.adj_n = 0
        f.gen_start = self.gen.n
        f.gen_n = 0
        f.type_start = self.types_n
        f.type_n = 0
        f.of_start = self.ofs.n
        f.of_n = 0
        f.child_mask = f.adj_mask = f.gen_mask = 0
        f.child_cls = f.adj_cls = f.gen_cls = 0

    cdef void _materialize_all(self) noexcept:
        """Set up the ranges of every light frame (before the stack is changed below its top):
        a light frame added nothing to the stacks, so its ranges start where those of the next
        frame above it that is not light start, or at the tops."""
        cdef Py_ssize_t j
        cdef CFrame* f
        cdef CFrame tops
        self._materialize(&tops)
        for j in range(self.n_frames - 1, 0, -1):
            f = &self.frames[j]
            if f.light:
                tops.detached = f.detached
                tops.child_count = f.child_count
                tops.desc_mask = f.desc_mask
                tops.pend_top = f.pend_top
                f[0] = tops
            else:
                tops = f[0]
                tops.child_n = tops.adj_n = tops.gen_n = tops.type_n = tops.of_n = 0
                tops.child_mask = tops.adj_mask = tops.gen_mask = 0
                tops.child_cls = tops.adj_cls = tops.gen_cls = 0

    cdef int _push_staged(self, Py_ssize_t top) except -1:
        """Push the states the element of frame ``top`` staged onto the stacks (its ranges
        start at their tops)."""
        cdef Py_ssize_t i
        cdef int s
        for i in range(self.n_stage_desc):
            s = self.stage_desc[i]
            if self.desc_owner[s] < 0:
                self.desc_owner[s] = <int>top
                ipush(&self.desc, s)
        for i in range(self.n_stage_dup):
            ipush(&self.dup, self.stage_dup[i])
        for i in range(self.n_stage_child):
            ipush(&self.child, self.stage_child[i])
        self.n_stage_desc = 0
        self.n_stage_child = 0
        self.n_stage_dup = 0
        self.stage_desc_mask = 0
        self.stage_child_mask = 0
        self.stage_child_cls = 0
        return 0

    cdef inline void _cut_ranges(self, CFrame* f) noexcept:
        """Truncate the pending-state stacks to where frame ``f``'s ranges start."""
        cdef Py_ssize_t i
        for i in range(f.desc_start, self.desc.n):
            self.desc_owner[self.desc.data[i]] = -1
        self.desc.n = f.desc_start
        self.dup.n = f.dup_start
        self.child.n = f.child_start
        self.adj.n = f.adj_start
        self.gen.n = f.gen_start
        self.types_n = f.type_start
        self.ofs.n = f.of_start

    cdef inline void _drop(self) noexcept:
        """Close the innermost frame: truncate the stacks to where it started."""
        cdef CFrame* f = &self.frames[self.n_frames - 1]
        if not f.light:
            self._cut_ranges(f)
        if f.detached:
            self.n_detached -= 1
        self.n_frames -= 1

    cpdef void pop(self) noexcept:
        """Close the innermost open element (and the removed elements it was the last open
        element inside of)."""
        if self.n_frames <= 1:
            return
        if not self.program.needs_frames:
            self.n_frames -= 1
            return
        self._drop()
        while self.n_frames > 1 and self.frames[self.n_frames - 1].detached:
            self._drop()

    cpdef remove_at(self, Py_ssize_t index):
        """The tree builder removes open element ``index`` (0: the outermost, as the open-element
        stack is indexed) from the stack while elements above it stay open (``</form>``, the
        adoption agency).  In the tree those elements remain its descendants, so it stays their
        ancestor here too: its pending states keep applying to them and to what opens inside
        them, and it is closed when the last of them is.  Its parent's later children are then
        its later siblings, as in the tree.  Removing the innermost element is ``pop()``."""
        cdef Py_ssize_t p, k = -1
        if index < 0 or index >= self.n_frames - 1 - self.n_detached:
            raise IndexError("no open element at that index")
        if not self.program.needs_frames:
            self.n_frames -= 1
            return
        for p in range(1, self.n_frames):
            if not self.frames[p].detached:
                k += 1
                if k == index:
                    break
        if p == self.n_frames - 1:
            self.pop()
        else:
            self.frames[p].detached = True
            self.n_detached += 1

    # ------------------------------------------------------------------ stack surgery
    # The rewriter replays changes the tree builder makes below the top of the stack (elements
    # taken out of the middle, inserted below open ones, <head> re-opened for content put back
    # into it, transient and merged elements matched in another place).  A frame that leaves the
    # stack is copied out with its pending ranges (SavedFrame); the frames above it are copied
    # out and appended again in their new order, so every range stays in stack order.  None of
    # this is on the per-element path: it costs the frames above the change.  Descendant states
    # an element made pending while an ancestor had them already are kept apart (``dup``):
    # when that ancestor leaves, the outermost of the others that stays takes them over.

    cdef SavedFrame _save(self, Py_ssize_t j):
        """A copy of open frame ``j`` with its ranges."""
        cdef SavedFrame sf = SavedFrame()
        cdef CFrame* f = &self.frames[j]
        cdef Py_ssize_t i, desc_end, dup_end
        if j + 1 < self.n_frames:
            desc_end = self.frames[j + 1].desc_start
            dup_end = self.frames[j + 1].dup_start
        else:
            desc_end = self.desc.n
            dup_end = self.dup.n
        sf.f = f[0]
        sf.staged = [self.desc.data[i] for i in range(f.desc_start, desc_end)]
        for i in range(f.dup_start, dup_end):
            sf.staged.append(self.dup.data[i])
        sf.child = [self.child.data[i] for i in range(f.child_start, f.child_start + f.child_n)]
        sf.adj = [self.adj.data[i] for i in range(f.adj_start, f.adj_start + f.adj_n)]
        sf.gen = [self.gen.data[i] for i in range(f.gen_start, f.gen_start + f.gen_n)]
        sf.ofs = [self.ofs.data[i] for i in range(f.of_start, f.of_start + 2 * f.of_n)]
        sf.types = [(self.types[i].key, self.types[i].kind, self.types[i].count)
                    for i in range(f.type_start, f.type_start + f.type_n)]
        return sf

    cdef int _truncate(self, Py_ssize_t k) except -1:
        """Close frames ``k`` and above at once (their ranges go; save them first)."""
        cdef CFrame* f
        cdef Py_ssize_t i
        if k >= self.n_frames:
            return 0
        f = &self.frames[k]
        self._cut_ranges(f)
        for i in range(k, self.n_frames):
            if self.frames[i].detached:
                self.n_detached -= 1
        self.n_frames = k
        return 0

    cdef int _restore(self, SavedFrame sf) except -1:
        """Open a saved frame as the innermost one, its ranges on top of the stacks; it owns the
        descendant states no ancestor has pending."""
        cdef CFrame* f
        cdef Py_ssize_t top = self.n_frames
        cdef uint64_t mask
        cdef TypeCount* tc
        cdef int s
        if top == self.frames_cap:
            self.frames = <CFrame*>grow(self.frames, &self.frames_cap, top + 1, sizeof(CFrame))
        f = &self.frames[top]
        f[0] = sf.f
        mask = self.frames[top - 1].desc_mask if top > 0 else 0    # (0: the document)
        f.desc_start = self.desc.n
        f.dup_start = self.dup.n
        for s in sf.staged:
            if self.desc_owner[s] < 0:
                self.desc_owner[s] = <int>top
                ipush(&self.desc, s)
                mask |= self.program.c_states[s].tag_bit
            else:
                ipush(&self.dup, s)
        f.desc_mask = mask
        f.pend_top = top if sf.staged or sf.child or sf.adj or sf.gen or sf.types or sf.ofs else (
            self.frames[top - 1].pend_top if top > 0 else 0)
        f.child_start = self.child.n
        for s in sf.child:
            ipush(&self.child, s)
        f.adj_start = self.adj.n
        for s in sf.adj:
            ipush(&self.adj, s)
        f.gen_start = self.gen.n
        for s in sf.gen:
            ipush(&self.gen, s)
        f.of_start = self.ofs.n
        for s in sf.ofs:
            ipush(&self.ofs, s)
        f.type_start = self.types_n
        if self.types_n + len(sf.types) > self.types_cap:
            self.types = <TypeCount*>grow(self.types, &self.types_cap,
                                          self.types_n + len(sf.types), sizeof(TypeCount))
        for key, kind, count in sf.types:
            tc = &self.types[self.types_n]
            tc.key = key
            tc.kind = kind
            tc.count = count
            self.types_n += 1
        if f.detached:
            self.n_detached += 1
        self.n_frames = top + 1
        return 0

    cdef object detach_frame(self, Py_ssize_t i):
        """Take open frame ``i`` (1: the outermost element) out of the stack, wherever it is,
        and return it (None without frames) for attach_frame(); the frames above it keep their
        state, without its descendant states."""
        cdef list saved
        cdef Py_ssize_t j
        if i < 1 or i >= self.n_frames:
            return None
        if not self.program.needs_frames:
            self.n_frames -= 1
            return None
        self._materialize_all()
        saved = [self._save(j) for j in range(i, self.n_frames)]
        self._truncate(i)
        for j in range(1, len(saved)):
            self._restore(<SavedFrame>saved[j])
        return saved[0]

    cdef int attach_frame(self, object f) except -1:
        """Open again, as the innermost frame, a frame detach_frame() returned."""
        cdef SavedFrame sf
        if not self.program.needs_frames:
            self.n_frames += 1
            return 0
        if f is None:
            sf = _empty_frame()
        else:
            sf = <SavedFrame?>f
        self._restore(sf)
        return 0

    cdef int insert_frame(self, Py_ssize_t i) except -1:
        """Open a frame at ``i`` (below frames already open) for an element the tree builder
        inserted there; it was not matched and leaves nothing pending for its descendants."""
        cdef list saved
        cdef SavedFrame sf
        cdef Py_ssize_t j
        if i < 1 or i > self.n_frames:
            return 0
        if not self.program.needs_frames:
            self.n_frames += 1
            return 0
        self._materialize_all()
        saved = [self._save(j) for j in range(i, self.n_frames)]
        self._truncate(i)
        self._restore(_empty_frame())
        for sf in saved:
            self._restore(sf)
        return 0

    cdef int push_unknown(self) except -1:
        """Open a frame for an element that is not known (beyond the simulator's max_depth):
        its children have no pending states and no position (:nth-* do not match them)."""
        self.n_stage_desc = 0
        self.n_stage_child = 0
        self.n_stage_dup = 0
        self.stage_desc_mask = 0
        self.stage_child_mask = 0
        self.stage_child_cls = 0
        self.push()
        if self.program.needs_frames:
            self.frames[self.n_frames - 1].child_count = -(1 << 60)
        return 0

    cdef object sibling_state(self, Py_ssize_t i):
        """What open frame ``i`` keeps for its next children (the states their earlier
        siblings left), for match_uncounted(); None without frames."""
        cdef CFrame* f
        cdef Py_ssize_t k
        if not self.program.needs_frames or i < 0 or i >= self.n_frames:
            return None
        self._materialize_all()
        f = &self.frames[i]
        return ([self.adj.data[k] for k in range(f.adj_start, f.adj_start + f.adj_n)],
                [self.gen.data[k] for k in range(f.gen_start, f.gen_start + f.gen_n)],
                f.adj_mask, f.gen_mask)

    cdef list match_uncounted(self, Lexer lx, TagRec* tag, uint64_t name_hash, bytes name,
                              int ns, Py_ssize_t parent, object siblings):
        """match() for a start tag that creates no element of its own (a second <body> merged
        into the open one): the rules it matches as the open element's twin, i.e. as a child
        of the open frame ``parent`` (its ancestors only) at the position of that element (the
        last child), with the sibling states ``siblings`` (from sibling_state() just before
        that element was matched; None: no earlier sibling), leaving every frame's state as it
        was."""
        cdef Py_ssize_t n_frames = self.n_frames, i
        cdef list saved
        cdef list matched
        cdef CFrame* p
        cdef uint64_t key
        cdef int kind = 0, s
        if parent < 0 or parent >= n_frames:
            parent = n_frames - 1
        if not self.program.needs_frames:
            self.n_frames = parent + 1      # (for :root)
            try:
                return self.match(lx, tag, name_hash, name, ns)
            finally:
                self.n_frames = n_frames
        self._materialize_all()
        saved = [self._save(i) for i in range(parent, n_frames)]
        try:
            if parent < n_frames - 1:
                self._truncate(parent + 1)      # only the ancestors' states
                p = &self.frames[parent]
                # the twin's own element counts as its position: it is the last child of parent
                p.child_count -= 1
                key = name_hash
                if name_hash == INVALID_HASH:
                    kind = 1
                    key = <uint64_t>(-1)
                    if self.name_ids is not None and name is not None and name in self.name_ids:
                        key = self.name_ids[name]
                for i in range(p.type_start, p.type_start + p.type_n):
                    if self.types[i].key == key and self.types[i].kind == kind:
                        if self.types[i].count > 0:
                            self.types[i].count -= 1
                        break
                # the sibling states there are those the element itself left: not for its twin
                self.adj.n = p.adj_start
                self.gen.n = p.gen_start
                p.adj_n = p.gen_n = 0
                p.adj_mask = p.gen_mask = 0
                p.adj_cls = p.gen_cls = 0
                if siblings is not None:
                    for s in siblings[0]:
                        ipush(&self.adj, s)
                    for s in siblings[1]:
                        ipush(&self.gen, s)
                    p.adj_n = len(siblings[0])
                    p.gen_n = len(siblings[1])
                    p.adj_mask = siblings[2]
                    p.gen_mask = siblings[3]
                    p.adj_cls = p.gen_cls = ~(<uint64_t>0)     # (not skipped by class)
            matched = self.match(lx, tag, name_hash, name, ns)
        finally:
            self.n_stage_desc = 0
            self.n_stage_child = 0
            self.n_stage_dup = 0
            self.stage_desc_mask = 0
            self.stage_child_mask = 0
            self.stage_child_cls = 0
            self._truncate(parent)
            for i in range(len(saved)):
                self._restore(<SavedFrame>saved[i])
        return matched

    # ------------------------------------------------------------------ the rewriter's lazy mirror
    # The rewriter follows the open elements only where it has work left (see elements.pyx).
    # Without frames it only needs the number of open elements (for :root).  With frames
    # (Program.compound_index), every frame above the innermost one with states pending or
    # counts by type or of S (``pend_top``) has nothing pending, and the elements of the tags
    # the rewriter skipped have nothing: their frames are made when it catches up (reopen; the
    # rewriter gives them their child counts), and an element that may match a compound is
    # tried where it stands (probe) before any replay.

    cdef int reopen(self, Py_ssize_t exact, Py_ssize_t n) except -1:
        """``n`` elements are open (``n`` >= ``exact``), of which the first ``exact`` have
        their frames as they are; the others have nothing pending (empty frames).  What a
        probe staged is kept (for the push of its element)."""
        cdef CFrame* f
        if not self.program.needs_frames:
            self.n_frames = n + 1
            return 0
        # (the frames above ``exact`` are empty and alike: only their number changes)
        while self.n_frames > n + 1:
            self._drop()
        if n + 1 > self.frames_cap:
            self.frames = <CFrame*>grow(self.frames, &self.frames_cap, n + 1, sizeof(CFrame))
        while self.n_frames < n + 1:
            # what push() opens for an element with nothing staged (what a probe staged stays)
            f = &self.frames[self.n_frames]
            f.detached = False
            f.light = True
            f.child_count = 0
            f.desc_mask = self.frames[self.n_frames - 1].desc_mask
            f.pend_top = self.frames[self.n_frames - 1].pend_top
            self.n_frames += 1
        return 0

    cdef int probe(self, Lexer lx, TagRec* tag, uint64_t name_hash, int ns, Py_ssize_t exact,
                   Py_ssize_t parent, Py_ssize_t parent_count) except -1:
        """Whether the element of ``tag`` would match a rule or leave states pending for its
        descendants or its later siblings, as the child of open frame ``parent``, which has
        ``parent_count`` element children before it: frames up to ``exact`` are as they are,
        those above it have nothing pending (``parent`` > ``exact``: a frame above frame
        ``exact`` with nothing pending): 0 if not, 1 if so, 2 if it was not tried or if its
        match made sibling states pending.  Every frame is left as it was.  1: the match is
        left as match_ids leaves it (the rules in ``matched``, the states staged for push()):
        it is the match of the element where it is opened next, if nothing else is matched
        before."""
        cdef Py_ssize_t n_frames = self.n_frames, k = exact, n, adj_n = 0, gen_n = 0, child_count
        cdef bint staged, parent_may_change
        cdef uint64_t bit = (<uint64_t>1) << (name_hash & 63)
        cdef CFrame* f
        cdef CFrame saved
        if exact >= n_frames:
            return 2
        f = &self.frames[exact]
        parent_may_change = False
        if self.program.positional:
            if parent == exact and not f.light and f.adj_n:
                return 2            # (it takes the adjacent-sibling states: the replay does)
            if self.program.counts_type(name_hash):
                return 2            # (counted by type: the replay counts it)
            # (its match may add sibling states or a count of S to its parent's frame)
            parent_may_change = self.program.sibling_combinators or self.program.of_counts
        # (by the masks of the tags of the pending states, none of those for it, and no first
        # compound either: most elements)
        if not (self.desc.n and f.desc_mask & bit) and not (
                parent == exact and not f.light and (
                    f.child_n and f.child_mask & bit or f.gen_n and f.gen_mask & bit)) and \
                not self.program.may_match(lx, tag, name_hash):
            return 0
        if parent > exact:
            # The parent has nothing pending: any such frame above ``exact`` is one (they
            # differ in their child counts only); above the top one, a light one for now.
            k = exact + 1
            if k >= n_frames:
                if k >= self.frames_cap:
                    self.frames = <CFrame*>grow(self.frames, &self.frames_cap, k + 1,
                                                sizeof(CFrame))
                f = &self.frames[k]
                f.light = True
                f.detached = False
                f.child_count = 0
                f.desc_mask = self.frames[exact].desc_mask
                f.pend_top = self.frames[exact].pend_top
        f = &self.frames[k]
        child_count = f.child_count
        if parent_count >= 0:
            f.child_count = parent_count        # (match_ids counts the element there)
        if parent_may_change:
            saved = f[0]
            adj_n = self.adj.n
            gen_n = self.gen.n
            self.probing = True         # (:nth-child(... of S) counts wait: _set_flag)
            self.probe_counted = False
        self.n_frames = k + 1
        # (after an error the stream is failed: nothing to restore then)
        n = self.match_ids(lx, tag, name_hash, None, ns)
        self.n_frames = n_frames
        f = &self.frames[k]
        f.child_count = child_count
        if parent_may_change and (self.adj.n != adj_n or self.gen.n != gen_n
                                  or f.light != saved.light or self.probe_counted):
            # states pending for its later siblings, or counted among those that match S:
            # its parent's frame changed, which the replay's own match does again
            self.probing = False
            self.adj.n = adj_n
            self.gen.n = gen_n
            f[0] = saved
            f.child_count = child_count
            return 2
        self.probing = False
        staged = self.n_stage_desc or self.n_stage_child or self.n_stage_dup
        return 1 if n > 0 or staged else 0
