# What a Rewriter hands to its streams (see rules.pyx): its settings and its compiled rules.
from htmlstream._engine.matcher cimport Program


cdef class RewriterSettings:
    cdef public object on_limit
    cdef public object scripting
    cdef public object strict
    cdef public object esi_tags
    cdef public object max_buffer_size
    cdef public object max_attributes
    cdef public object adjust_charset_on_meta_tag
    cdef public object sniff
    cdef public object transcode
    cdef public object on_error         # the streams' parse-error callback, or None
    cdef public object ignored_tags
    cdef public object _scanner         # (see Rewriter._scanner and _lazy_mirror)
    cdef public object _lazy_mirror


cdef class Rules:
    cdef public Program program
    cdef public list element_handlers   # per rule: [(seq, fn)]
    cdef public list text_handlers      # per rule: [(seq, fn)]
    cdef public list comment_handlers   # per rule: [(seq, fn)]
    cdef public list doc_text           # [(seq, fn)]
    cdef public list doc_comments
    cdef public list doc_doctype
    cdef public list doc_end            # [fn]
    cdef public bint any_text
    cdef public bint any_element
    cdef public bint any_scoped         # some rule has text or comment handlers
    # per rule: its element handlers if they also run for implied elements (implied=True),
    # else []; any_implied: some rule's do
    cdef public list implied_handlers
    cdef public bint any_implied
    cdef public bint any_text_filter    # some text handler has a TextFilter (see on_text)
    cdef public dict active_cache       # active rules (a mask) -> (text, comment handlers)
                                        # in force (see RewriteSink.refresh_active)
    # Names of the start tags whose attributes a rule may read (tested by a selector, or of an
    # element a handler gets), or None: every start tag (see Lexer.set_attribute_policy).
    cdef public object attribute_tags
    cdef public object attribute_policy # those and the simulator's, worked out for the lexer
                                        # (rewriter.attribute_policy_for; None: not yet)


cdef class CompiledRules:
    cdef readonly RewriterSettings settings
    cdef readonly list selectors        # the rules' selectors, in rule order
    cdef readonly bint meta_rule        # rule 0 is the <meta charset> rule (META_RULE)
    cdef Rules first                    # compiled for the codec the Rewriter asked for
    cdef dict by_codec                  # codec -> Rules (first, and the others at first use)
    # Rewriter.pipe: the factories of the output stages each stream runs its output through
    # (a tuple), or None
    cdef public object stages
    # on_document(passthrough=...): called as fn(context, reason) when a stream stops
    # rewriting and passes its input through (a tuple), or None
    cdef public object passthrough_hooks
    # codec -> the selectors' Program for that codec (the Rewriter's shared cache of compiled
    # selectors), or None: for_codec compiles them itself
    cdef public object program_for
    cpdef Rules for_codec(self, str codec)


# What a filtered text handler waits for: its entry in a handler list is (seq, fn, TextFilter).
cdef class TextFilter:
    cdef readonly bytes chars           # the filter's bytes (ASCII), each once
    cdef readonly bint undecodable      # text with bytes the encoding cannot decode passes too
    cdef unsigned types                 # bit t: the filter applies to text of type t
    cdef unsigned char table[256]       # 1 for each of them
    cdef bint plain                     # the characters only (no undecodable, every type)
    cdef Py_ssize_t n_chars             # how many there are
    cdef unsigned char first            # the first of them
    cdef bint found(self, const unsigned char* p, Py_ssize_t n) noexcept
    cdef bint passes(self, const unsigned char* p, Py_ssize_t n, int text_type,
                     bint utf8) noexcept


# The handler of the <meta charset> rule (Rewriter(adjust_charset_on_meta_tag=True)): not
# called, recognised by the sink, which hands the element to its stream's switch.
cdef class MetaCharsetRule:
    pass
