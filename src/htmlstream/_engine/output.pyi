# Type stub for the output of a rewriting stream (output.pyx): the buffer and its seams.

from typing import final

# The output buffer of one stream and its seams (C methods only: RewriteSink writes through it).
@final
class Output: ...
