# cython: language_level=3
"""Selector matching on the open-element stack, in one forward pass.

A complex selector ``A > B C + D`` is a chain of states, one per compound, read left to right.
When an element matches a state's compound, the next state becomes *pending* where the
combinator says the next compound must be found: for the element's descendants (`` ``), its
children (``>``), its next element sibling (``+``) or all its later siblings (``~``).  Those
pending states live on the frames of the open-element stack, so an element is only ever tested
against the first compounds (indexed by tag name) and the states its ancestors and earlier
siblings left pending: the cost does not grow with selectors that cannot match the tag.

Arguments of ``:not()``, ``:is()``, ``:where()`` and ``:nth-child(An+B of S)`` are compiled as
further chains whose last state sets a *flag* on the element instead of matching a rule; they
sit one nesting level deeper and are decided first, so the compound that reads the flag knows it.
"""

from libc.stdint cimport uint64_t
from libc.string cimport memcmp

from htmlstream._engine.lexer cimport AttrRec, Lexer, TagRec
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

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

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

cdef bytes _WS = b" \t\n\f\r"


cdef inline uint64_t fnv1a(const unsigned char* p, Py_ssize_t n) noexcept:
    cdef uint64_t h = 14695981039346656037ULL
    cdef Py_ssize_t i
    for i in range(n):
        h = (h ^ p[i]) * 1099511628211ULL
    return h


cdef inline void bloom_add(uint64_t* bloom, uint64_t h) noexcept:
    bloom[(h & 255) >> 6] |= (<uint64_t>1) << (h & 63)
    bloom[((h >> 8) & 255) >> 6] |= (<uint64_t>1) << ((h >> 8) & 63)


cdef inline bint bloom_has(const uint64_t* bloom, uint64_t h) noexcept:
    return ((bloom[(h & 255) >> 6] >> (h & 63)) & 1) and \
        ((bloom[((h >> 8) & 255) >> 6] >> ((h >> 8) & 63)) & 1)


cdef inline bint plain_value(const unsigned char* p, Py_ssize_t n) noexcept:
    """No character reference, CR or NUL: the raw bytes are the value."""
    cdef Py_ssize_t i
    for i in range(n):
        if p[i] == 0x26 or p[i] == 0x0D or p[i] == 0:
            return False
    return True


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


cdef list split_html_ws(bytes value):
    """``value`` split on HTML whitespace (bytes.split() would also split on \\x0b)."""
    return [token for token in value.replace(b"\t", b" ").replace(b"\n", b" ").replace(
        b"\f", b" ").replace(b"\r", b" ").split(b" ") if token]


cdef class Compound:
    pass


cdef class State:
    pass


cdef class Program:
    """Selectors compiled for matching; built once per Rewriter and shared by its streams."""

    def __init__(self, list rules, str encoding="utf-8"):
        """``rules``: one parsed ``SelectorList`` per rule, in registration order."""
        self.states = []
        self.compounds = []
        self.entry_by_hash = {}
        self.entry_by_name = []
        self.entry_any = []
        self.entry_by_id = {}
        self.entry_by_class = {}
        self.entry_by_attr = {}
        self.attr_index = False
        self.n_flags = 0
        self.hash_filter = 0
        self.needs_frames = False
        self.n_rules = len(rules)
        self.nested = False
        self.uses_nth_of_type = False
        self.encoding = encoding
        self.utf8 = encoding.replace("_", "-").lower() in ("utf-8", "utf8")
        for rule_id, selector_list in enumerate(rules):
            self._add_list(selector_list, rule_id, 0)
        self.n_states = len(self.states)
        for i in range(4):
            self.id_bloom[i] = 0
            self.class_bloom[i] = 0
        for key in self.entry_by_id:
            bloom_add(self.id_bloom, fnv1a(key, len(key)))
        for key in self.entry_by_class:
            bloom_add(self.class_bloom, fnv1a(key, len(key)))
        self.attr_len_mask = 0
        for key in self.entry_by_attr:
            self.attr_len_mask |= (<uint64_t>1) << (len(key) if len(key) < 63 else 63)
        self.levels = [(<State>st).level for st in self.states]

    def _add_list(self, selector_list, int target, int level):
        for complex_sel in selector_list.selectors:
            self._add_complex(complex_sel, target, level)

    def _new_flag(self, selector_list, int level):
        flag = self.n_flags
        self.n_flags += 1
        self.nested = True
        self.needs_frames = True     # flags are decided in the full pass
        self._add_list(selector_list, -flag - 1, level + 1)
        return flag

    def _add_complex(self, complex_sel, int target, int level):
        compounds = complex_sel.compounds
        combinators = complex_sel.combinators
        n = len(compounds)
        # Compile the compounds first: their arguments (:not, :is...) add states of their own,
        # and this chain's states must be consecutive.
        compiled = [self._compile_compound(compound, level) for compound in compounds]
        first_id = len(self.states)
        for i in range(n):
            st = State()
            st.id = first_id + i
            st.compound = compiled[i]
            st.level = level
            if i + 1 < n:
                self.needs_frames = True    # a combinator: states wait on the stack
                st.next_state = first_id + i + 1
                st.combinator = _COMBINATORS[combinators[i]]
                st.target = 0
            else:
                st.next_state = -1
                st.combinator = C_DESC
                st.target = target
            self.states.append(st)
        first = self.states[first_id]
        comp = (<State>first).compound
        if comp.never:
            pass                        # can never match: not an entry at all
        elif comp.tag_hash == EMPTY_HASH and comp.tag_name is None:
            # No tag name: index by an attribute the compound needs, so that it is only tried
            # on elements that have it (.note, #main, [href] ... cost nothing elsewhere).
            key = self._attribute_key(compounds[0])
            if key is None:
                self.entry_any.append(first_id)
            else:
                index = {"id": self.entry_by_id, "class": self.entry_by_class,
                         "attr": self.entry_by_attr}[key[0]]
                index.setdefault(key[1], []).append(first_id)
                self.attr_index = True
        elif comp.tag_name is not None:
            self.entry_by_name.append((comp.tag_name, first_id))
        else:
            self.entry_by_hash.setdefault(comp.tag_hash, []).append(first_id)
            self.hash_filter |= (<uint64_t>1) << (comp.tag_hash & 63)

    def _attribute_key(self, compound):
        """("id", value) / ("class", name) / ("attr", lower name) that an element must have
        for ``compound`` to match it, or None."""
        if compound.ids:
            value = self._encode(compound.ids[0])
            return None if value is None else ("id", value)
        if compound.classes:
            value = self._encode(compound.classes[0])
            return None if value is None else ("class", value)
        if compound.attributes:
            name = self._encode(compound.attributes[0].name.translate(_ASCII_LOWER))
            return None if name is None else ("attr", name)
        return None

    def _encode(self, str value):
        try:
            return value.encode(self.encoding)
        except UnicodeEncodeError:
            return None     # cannot occur in this document's bytes

    def _compile_compound(self, compound, int level):
        cdef Compound c = Compound()
        cdef bytes name
        c.tag_hash = EMPTY_HASH
        c.tag_name = None
        c.attr_tests = []
        c.pseudos = []
        c.never = False
        c.svg_ok = True
        c.math_ok = True
        if compound.tag is not None:
            # Type selectors: ASCII case-insensitive on HTML elements, exact on SVG and MathML
            # elements, whose names the parser gives in their canonical case.
            lower = compound.tag.translate(_ASCII_LOWER)
            c.svg_ok = compound.tag == SVG_TAG_NAMES.get(lower, lower)
            c.math_ok = compound.tag == lower
            name = lower.encode("utf-8")
            h = hash_bytes(name, len(name))
            if h == INVALID_HASH:
                c.tag_name = name
            else:
                c.tag_hash = h
        for ident in compound.ids:
            self._attr_test(c, "id", A_EQUALS, ident, CASE_SENSITIVE)
        for cls in compound.classes:
            self._attr_test(c, "class", A_INCLUDES, cls, CASE_SENSITIVE)
        for attr in compound.attributes:
            op = _OPS[attr.op]
            if attr.case is _sel.CaseFlag.INSENSITIVE:
                case = CASE_INSENSITIVE
            elif attr.case is _sel.CaseFlag.SENSITIVE:
                case = CASE_SENSITIVE
            elif attr.name.translate(_ASCII_LOWER) in HTML_CASE_INSENSITIVE_ATTRIBUTES:
                case = CASE_HTML
            else:
                case = CASE_SENSITIVE
            self._attr_test(c, attr.name, op, attr.value, case)
        for pseudo in compound.pseudos:
            if isinstance(pseudo, _sel.NthChild):
                flag = -1 if pseudo.of is None else self._new_flag(pseudo.of, level)
                c.pseudos.append((P_NTH_CHILD, pseudo.a, pseudo.b, flag))
                self.needs_frames = True
            elif isinstance(pseudo, _sel.NthOfType):
                self.uses_nth_of_type = True
                c.pseudos.append((P_NTH_OF_TYPE, pseudo.a, pseudo.b, -1))
                self.needs_frames = True
            elif isinstance(pseudo, _sel.Root):
                c.pseudos.append((P_ROOT, 0, 0, -1))
            elif isinstance(pseudo, _sel.Not):
                c.pseudos.append((P_NOT, 0, 0, self._new_flag(pseudo.arg, level)))
            elif isinstance(pseudo, (_sel.Is, _sel.Where)):
                c.pseudos.append((P_IS, 0, 0, self._new_flag(pseudo.arg, level)))
            else:
                raise TypeError(f"unsupported pseudo-class {pseudo!r}")
        self.compounds.append(c)
        return c

    def _attr_test(self, Compound c, str name, int op, value, int case):
        cdef bytes vbytes = None
        if op != A_EXISTS:
            vbytes = self._encode(value)
            if vbytes is None:
                c.never = True
                return
            # CSS: an empty operand of ^= $= *= matches nothing; ~= never matches "" or spaces.
            if op in (A_PREFIX, A_SUFFIX, A_SUBSTRING) and not vbytes:
                c.never = True
            if op == A_INCLUDES and (not vbytes or any(ch in _WS for ch in vbytes)):
                c.never = True
        lname = self._encode(name.translate(_ASCII_LOWER))
        if lname is None:
            c.never = True
            return
        c.attr_tests.append((lname, op, vbytes,
                             None if vbytes is None else vbytes.lower(), case))


cdef class Frame:
    pass


cdef inline bint nth_matches(long a, long b, long index) noexcept:
    """Whether index (1-based) is a*n + b for some n >= 0."""
    cdef long diff = index - b
    if a == 0:
        return diff == 0
    if (diff > 0 and a < 0) or (diff < 0 and a > 0):
        return False
    return diff % a == 0


cdef inline bint same(const unsigned char* p, const unsigned char* q, Py_ssize_t n,
                      bint insensitive) noexcept:
    """p[:n] == q[:n]; with ``insensitive`` p is ASCII-lower-cased first (q is lower-case)."""
    cdef Py_ssize_t i
    cdef unsigned char c
    if not insensitive:
        return memcmp(p, q, n) == 0
    for i in range(n):
        c = p[i]
        if 0x41 <= c <= 0x5A:
            c |= 0x20
        if c != q[i]:
            return False
    return True


cdef bint raw_matches(int op, const unsigned char* v, Py_ssize_t vn, bytes wanted,
                      bint insensitive) noexcept:
    """value_matches on a raw value in place, without allocating."""
    cdef const unsigned char* w = <const unsigned char*><const char*>wanted
    cdef Py_ssize_t wn = len(wanted)
    cdef Py_ssize_t j, k
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
        for j in range(vn - wn + 1):
            if same(v + j, w, wn, insensitive):
                return True
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


cdef bint value_matches(int op, bytes actual, bytes wanted):
    cdef Py_ssize_t n, i, j, m
    if op == A_EQUALS:
        return actual == wanted
    if op == A_PREFIX:
        return actual.startswith(wanted)
    if op == A_SUFFIX:
        return actual.endswith(wanted)
    if op == A_SUBSTRING:
        return wanted in actual
    if op == A_DASH:
        return actual == wanted or actual.startswith(wanted + b"-")
    if op == A_INCLUDES:
        return wanted in split_html_ws(actual)
    return True


cdef class Matcher:
    """Per-document matching state: a frame per open element."""

    def __init__(self, Program program):
        self.program = program
        doc = Frame()
        doc.name_hash = EMPTY_HASH
        doc.ns = 0
        self.frames = [doc]         # a pool: frames[0 : n_frames] are open, the rest reusable
        self.n_frames = 1
        self.cands = []
        self.desc_frames = []
        self.stamp = _zeros(max(program.n_states, 1))
        self.flag_stamp = _zeros(max(program.n_flags, 1))
        self.serial = 0
        self.pending_desc = None
        self.pending_child = None

    @property
    def depth(self):
        """Number of open elements."""
        return self.n_frames - 1

    cpdef list match_start_tag(self, Lexer lx, int ns, bint implied, uint64_t name_hash,
                               bytes name):
        """Match the element of the lexer's current tag (``implied``: an element with no tag)."""
        return self.match(lx, NULL if implied else &lx.tag, name_hash, name, ns)

    cdef list match(self, Lexer lx, TagRec* tag, uint64_t name_hash, bytes name, int ns):
        """The rule ids the element matches (sorted), or None.  Call push() next if it opens."""
        cdef Program prog = self.program
        cdef Frame parent = <Frame>self.frames[self.n_frames - 1 if prog.needs_frames else 0]
        cdef list cands
        cdef list matched = None
        cdef list desc_new = None, child_new = None, adj_new = None, gen_new = None
        cdef State st
        cdef int s, i, lvl
        cdef Frame f
        self.serial += 1
        self.lx = lx
        self.tag = tag
        if not prog.needs_frames:
            return self._match_simple(name_hash, name, ns, parent)
        parent.child_count += 1
        if prog.uses_nth_of_type:
            if parent.type_counts is None:
                parent.type_counts = {}
            parent.type_counts[name_hash if name_hash != INVALID_HASH else name] = \
                parent.type_counts.get(name_hash if name_hash != INVALID_HASH else name, 0) + 1
        if prog.n_states == 0:
            self.pending_desc = None
            self.pending_child = None
            parent.adj = None
            return None

        # Candidate states: first compounds for this tag, and what the stack left pending.
        cands = self.cands
        if cands:
            cands = self.cands = []
        if name_hash != INVALID_HASH:
            # a one-word filter on the hash spares the dictionary look-up for most tags
            if prog.hash_filter & ((<uint64_t>1) << (name_hash & 63)):
                entries = prog.entry_by_hash.get(name_hash)
                if entries is not None:
                    self._queue(cands, entries)
        elif prog.entry_by_name:
            for ename, sid in prog.entry_by_name:
                if ename == name:
                    self._queue(cands, [sid])
        if prog.entry_any:
            self._queue(cands, prog.entry_any)
        if prog.attr_index and tag != NULL and tag.n_attrs:
            for entries in self._attribute_entries():
                self._queue(cands, entries)
        if parent.child is not None:
            self._queue(cands, parent.child)
        if parent.adj is not None:
            self._queue(cands, parent.adj)
        if parent.gen is not None:
            self._queue(cands, parent.gen)
        for f in self.desc_frames:
            self._queue(cands, f.desc)
        if prog.nested and len(cands) > 1:
            cands.sort(key=prog.levels.__getitem__, reverse=True)

        for s in cands:
            st = <State>prog.states[s]
            if not self._test(st.compound, name_hash, name, ns, parent):
                continue
            if st.next_state < 0:
                if st.target >= 0:
                    if matched is None:
                        matched = [st.target]
                    elif st.target not in matched:
                        matched.append(st.target)
                else:
                    self._set_flag(-st.target - 1, parent)
                continue
            if st.combinator == C_DESC:
                if desc_new is None:
                    desc_new = []
                desc_new.append(st.next_state)
            elif st.combinator == C_CHILD:
                if child_new is None:
                    child_new = []
                child_new.append(st.next_state)
            elif st.combinator == C_ADJ:
                if adj_new is None:
                    adj_new = []
                adj_new.append(st.next_state)
            else:
                if gen_new is None:
                    gen_new = []
                gen_new.append(st.next_state)

        parent.adj = adj_new
        if gen_new is not None:
            if parent.gen is None:
                parent.gen = gen_new
            else:
                for s in gen_new:
                    if s not in parent.gen:
                        parent.gen.append(s)
        self.pending_desc = desc_new
        self.pending_child = child_new
        self.tag = NULL
        if matched is not None and len(matched) > 1:
            matched.sort()
        return matched

    cdef list _match_simple(self, uint64_t name_hash, bytes name, int ns, Frame parent):
        """Every selector is one compound with no structural pseudo-class: test the element's
        first compounds, nothing waits on the stack."""
        cdef Program prog = self.program
        cdef list matched = None
        cdef list entries = None
        cdef State st
        cdef int s
        if name_hash != INVALID_HASH:
            if prog.hash_filter & ((<uint64_t>1) << (name_hash & 63)):
                entries = prog.entry_by_hash.get(name_hash)
        elif prog.entry_by_name:
            for ename, sid in prog.entry_by_name:
                if ename == name:
                    matched = self._collect(matched, [sid], name_hash, name, ns, parent)
        if entries is not None:
            matched = self._collect(matched, entries, name_hash, name, ns, parent)
        if prog.entry_any:
            matched = self._collect(matched, prog.entry_any, name_hash, name, ns, parent)
        if prog.attr_index and self.tag != NULL and self.tag.n_attrs:
            for entries in self._attribute_entries():
                matched = self._collect(matched, entries, name_hash, name, ns, parent)
        self.tag = NULL
        if matched is not None and len(matched) > 1:
            matched.sort()
        return matched

    cdef list _collect(self, list matched, list states, uint64_t name_hash, bytes name, int ns,
                       Frame parent):
        cdef State st
        cdef int s
        for s in states:
            st = <State>self.program.states[s]
            if st.target >= 0 and self._test(st.compound, name_hash, name, ns, parent):
                if matched is None:
                    matched = [st.target]
                elif st.target not in matched:
                    matched.append(st.target)
        return matched

    cdef list _attribute_entries(self):
        """The first compounds indexed by an id, class or attribute name the current tag has.
        Bloom filters over the indexed ids and classes keep this allocation-free for the
        attributes no selector names."""
        cdef Program prog = self.program
        cdef TagRec* tag = self.tag
        cdef const unsigned char* d = self.lx.data - self.lx.base
        cdef const unsigned char* v
        cdef AttrRec* a
        cdef Py_ssize_t i, n, vn, j, k
        cdef bytes lname
        cdef list found = None
        for i in range(tag.n_attrs):
            a = &tag.attrs[i]
            n = a.name_end - a.name_start
            if prog.attr_len_mask & ((<uint64_t>1) << (n if n < 63 else 63)):
                lname = (<const char*>d + a.name_start)[:n].lower()
                entries = prog.entry_by_attr.get(lname)
                if entries is not None:
                    found = _add(found, entries)
            if a.value_start < 0:
                continue
            if n == 2 and prog.entry_by_id and (d[a.name_start] | 0x20) == 0x69 \
                    and (d[a.name_start + 1] | 0x20) == 0x64:
                v = d + a.value_start
                vn = a.value_end - a.value_start
                if plain_value(v, vn):
                    if not bloom_has(prog.id_bloom, fnv1a(v, vn)):
                        continue
                    entries = prog.entry_by_id.get((<const char*>v)[:vn])
                else:
                    entries = prog.entry_by_id.get(self._value(a))
                if entries is not None:
                    found = _add(found, entries)
            elif n == 5 and prog.entry_by_class and \
                    (<const char*>d + a.name_start)[:5].lower() == b"class":
                v = d + a.value_start
                vn = a.value_end - a.value_start
                if plain_value(v, vn):
                    j = 0
                    while j < vn:
                        k = token_end(v, vn, &j)
                        if k > j and bloom_has(prog.class_bloom, fnv1a(v + j, k - j)):
                            entries = prog.entry_by_class.get((<const char*>v + j)[:k - j])
                            if entries is not None:
                                found = _add(found, entries)
                        j = k
                else:
                    for token in split_html_ws(self._value(a)):
                        entries = prog.entry_by_class.get(token)
                        if entries is not None:
                            found = _add(found, entries)
        return found if found is not None else _EMPTY

    cdef void _queue(self, list cands, list states):
        cdef int s
        cdef int serial = self.serial
        for s in states:
            if self.stamp[s] != serial:
                self.stamp[s] = serial
                cands.append(s)

    cdef void _set_flag(self, int flag, Frame parent):
        if self.flag_stamp[flag] == self.serial:
            return
        self.flag_stamp[flag] = self.serial
        # :nth-child(An+B of S) counts the siblings that match S, this element included.
        if parent.of_counts is None:
            parent.of_counts = {}
        parent.of_counts[flag] = parent.of_counts.get(flag, 0) + 1

    cdef bint _flag(self, int flag):
        return self.flag_stamp[flag] == self.serial

    cdef bint _test(self, Compound c, uint64_t name_hash, bytes name, int ns, Frame parent):
        cdef int kind, flag
        cdef long a, b
        if c.never:
            return False
        if ns != 0 and not (c.svg_ok if ns == 1 else c.math_ok):
            return False
        if c.tag_hash != EMPTY_HASH:
            if c.tag_hash != name_hash:
                return False
        elif c.tag_name is not None:
            if name_hash != INVALID_HASH or c.tag_name != name:
                return False
        if c.attr_tests:
            if self.tag == NULL:
                return False        # an implied element has no attributes
            for aname, op, value, lower_value, case in c.attr_tests:
                if not self._attr_matches(aname, op, value, lower_value, case, ns):
                    return False
        for kind, a, b, flag in c.pseudos:
            if (kind == P_NTH_CHILD or kind == P_NTH_OF_TYPE) and parent.child_count < 0:
                return False        # the parent is not known (push_unknown)
            if kind == P_NTH_CHILD:
                if flag >= 0:
                    if not self._flag(flag):
                        return False
                    if not nth_matches(a, b, parent.of_counts.get(flag, 0)):
                        return False
                elif not nth_matches(a, b, parent.child_count):
                    return False
            elif kind == P_NTH_OF_TYPE:
                key = name_hash if name_hash != INVALID_HASH else name
                if not nth_matches(a, b, parent.type_counts.get(key, 0)):
                    return False
            elif kind == P_ROOT:
                if self.n_frames != 1:
                    return False
            elif kind == P_NOT:
                if self._flag(flag):
                    return False
            else:
                if not self._flag(flag):
                    return False
        return True

    cdef bint _attr_matches(self, bytes aname, int op, bytes value, bytes lower_value, int case,
                            int ns):
        """Test the current tag's first attribute called ``aname`` (lower-case bytes)."""
        cdef TagRec* tag = self.tag
        cdef const unsigned char* d = self.lx.data - self.lx.base
        cdef const unsigned char* q = <const unsigned char*><const char*>aname
        cdef Py_ssize_t n = len(aname)
        cdef Py_ssize_t i, k
        cdef AttrRec* a
        cdef unsigned char c
        cdef bytes actual
        for i in range(tag.n_attrs):
            a = &tag.attrs[i]
            if a.name_end - a.name_start != n:
                continue
            for k in range(n):
                c = d[a.name_start + k]
                if 0x41 <= c <= 0x5A:
                    c |= 0x20
                if c != q[k]:
                    break
            else:
                if op == A_EXISTS:
                    return True
                insensitive = case == CASE_INSENSITIVE or (case == CASE_HTML and ns == 0)
                if self.program.utf8 and a.value_start >= 0 and plain_value(
                        d + a.value_start, a.value_end - a.value_start):
                    # compare the raw bytes in place (UTF-8 is self-synchronising)
                    return raw_matches(op, d + a.value_start, a.value_end - a.value_start,
                                       lower_value if insensitive else value, insensitive)
                actual = self._value(a)
                if insensitive:
                    return value_matches(op, actual.lower(), lower_value)
                return value_matches(op, actual, value)
        return False

    cdef bytes _value(self, AttrRec* a):
        """An attribute's value, decoded (character references, newlines, NUL) and encoded back
        in the document's encoding, so that it compares with the selector's bytes."""
        cdef bytes value
        cdef str enc
        if a.value_start < 0:
            return b""
        value = (<const char*>self.lx.data + (a.value_start - self.lx.base))[
            :a.value_end - a.value_start]
        if b"&" in value or b"\r" in value or b"\0" in value:
            enc = self.program.encoding
            text = value.decode(enc, "replace").replace("\r\n", "\n").replace("\r", "\n")
            value = decode_charrefs(text, in_attribute=True).replace(
                "\0", "\ufffd").encode(enc, "xmlcharrefreplace")
        return value


    cpdef push(self, uint64_t name_hash, int ns):
        """Open a frame for the element just matched."""
        cdef Frame f
        if not self.program.needs_frames:
            self.n_frames += 1
            return
        if self.n_frames < len(self.frames):
            f = <Frame>self.frames[self.n_frames]
            f.child_count = 0
            f.type_counts = None
            f.of_counts = None
            f.adj = None
            f.gen = None
        else:
            f = Frame()
            self.frames.append(f)
        self.n_frames += 1
        f.name_hash = name_hash
        f.ns = ns
        f.desc = self.pending_desc
        f.child = self.pending_child
        self.pending_desc = None
        self.pending_child = None
        if f.desc is not None:
            self.desc_frames.append(f)

    cpdef pop(self):
        """Close the innermost frame."""
        cdef Frame f
        if self.n_frames <= 1:
            return
        self.n_frames -= 1
        if not self.program.needs_frames:
            return
        f = <Frame>self.frames[self.n_frames]
        if f.desc is not None:
            if self.desc_frames and self.desc_frames[len(self.desc_frames) - 1] is f:
                self.desc_frames.pop()
            f.desc = None


    # ------------------------------------------------------------------ stack surgery
    # The tree builder sometimes changes the open-element stack below its top (</form>, the
    # adoption agency, elements put back into <head>): these keep the other frames as they are.

    cdef object detach_frame(self, Py_ssize_t i):
        """Take the open frame ``i`` (1 = the outermost element) out of the stack, wherever it
        is, and return it (None without frames); the frames above it keep their state."""
        cdef Frame f
        cdef Py_ssize_t j
        if i < 1 or i >= self.n_frames:
            return None
        self.n_frames -= 1
        if not self.program.needs_frames:
            return None
        f = <Frame>self.frames.pop(i)
        if f.desc is not None:
            for j in range(len(self.desc_frames)):
                if self.desc_frames[j] is f:
                    del self.desc_frames[j]
                    break
        return f

    cdef int attach_frame(self, object f) except -1:
        """Open again, as the innermost frame, a frame detach_frame() returned."""
        if not self.program.needs_frames or f is None:
            self.n_frames += 1
            return 0
        self.frames.insert(self.n_frames, f)
        self.n_frames += 1
        if (<Frame>f).desc is not None:
            self.desc_frames.append(f)      # the innermost: last in stack order
        return 0

    cdef int insert_frame(self, Py_ssize_t i, uint64_t name_hash, int ns) except -1:
        """Open a frame at ``i`` (below frames already open) for an element the tree builder
        inserted there; it was not matched and leaves nothing pending for its descendants."""
        cdef Frame f
        if i < 1 or i > self.n_frames:
            return 0
        self.n_frames += 1
        if not self.program.needs_frames:
            return 0
        f = Frame()
        f.name_hash = name_hash
        f.ns = ns
        self.frames.insert(i, f)
        return 0

    cdef int push_unknown(self) except -1:
        """Open a frame for an element that is not known (beyond the simulator's max_depth):
        its children have no pending states and no position (:nth-* do not match them)."""
        cdef Frame f
        self.pending_desc = None
        self.pending_child = None
        self.push(EMPTY_HASH, 0)
        if self.program.needs_frames:
            f = <Frame>self.frames[self.n_frames - 1]
            f.child_count = -(1 << 60)
        return 0

    cdef object sibling_state(self, Py_ssize_t i):
        """What open frame ``i`` keeps for its next children (the states their earlier
        siblings left), for match_uncounted(); None without frames."""
        cdef Frame f
        if not self.program.needs_frames or i < 0 or i >= self.n_frames:
            return None
        f = <Frame>self.frames[i]
        return (f.adj, None if f.gen is None else list(f.gen))

    cdef list match_uncounted(self, Lexer lx, TagRec* tag, uint64_t name_hash, bytes name,
                              int ns, Py_ssize_t parent, object siblings):
        """match() for a start tag that creates no element of its own (a second <body> merged
        into the open one): the rules it matches as the open element's twin, i.e. as a child
        of the open frame ``parent`` (its ancestors only) at the position of that element (the
        last child), with the sibling states ``siblings`` (from sibling_state() just before
        that element was matched; None: no earlier sibling), leaving every frame's state as it
        was."""
        cdef Frame p
        cdef list matched
        cdef Py_ssize_t n_frames = self.n_frames, k = 0, j
        cdef list desc_frames = self.desc_frames
        if parent < 0 or parent >= n_frames:
            parent = n_frames - 1
        if not self.program.needs_frames:
            self.n_frames = parent + 1      # (for :root)
            try:
                return self.match(lx, tag, name_hash, name, ns)
            finally:
                self.n_frames = n_frames
        p = <Frame>self.frames[parent]
        child_count = p.child_count
        type_counts = None if p.type_counts is None else dict(p.type_counts)
        of_counts = None if p.of_counts is None else dict(p.of_counts)
        adj = p.adj
        gen = None if p.gen is None else list(p.gen)
        if parent < n_frames - 1:
            # the twin's own element counts as its position: it is the last child of parent
            p.child_count -= 1
            key = name_hash if name_hash != INVALID_HASH else name
            if p.type_counts is not None and p.type_counts.get(key, 0) > 0:
                p.type_counts[key] -= 1
            # the sibling states there are those the element itself left: not for its twin
            p.adj = None
            p.gen = None
            if siblings is not None:
                p.adj = siblings[0]
                p.gen = None if siblings[1] is None else list(siblings[1])
            # only the ancestors' descendant states (desc_frames is in stack order)
            for j in range(parent + 1):
                if (<Frame>self.frames[j]).desc is not None:
                    k += 1
            self.desc_frames = desc_frames[:k]
            self.n_frames = parent + 1
        try:
            matched = self.match(lx, tag, name_hash, name, ns)
        finally:
            self.n_frames = n_frames
            self.desc_frames = desc_frames
            p.child_count = child_count
            p.type_counts = type_counts
            p.of_counts = of_counts
            p.adj = adj
            p.gen = gen
            self.pending_desc = None
            self.pending_child = None
        return matched


cdef list _EMPTY = []


cdef inline list _add(list found, list entries):
    if found is None:
        return [entries]
    found.append(entries)
    return found


cdef object _zeros(Py_ssize_t n):
    import array
    return array.array("i", bytes(4 * n))
