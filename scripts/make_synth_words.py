"""Writes ``agentx/data/<encoding>.words``: the word tokens synthetic text draws from.

The table is what :func:`agentx.prefixcache.synth.encoding_words` finds by scanning the
tiktoken encoding; shipping it spares every replay loading the encoding (~45 MB) for it.
``tests/prefixcache/test_synth.py`` checks the shipped table against the scan.

    .venv/bin/python scripts/make_synth_words.py [ENCODING]
"""

from __future__ import annotations

import sys

from agentx.prefixcache.synth import encoding_words, format_words, words_path
from agentx.prefixcache.tokens import DEFAULT_ENCODING


def main() -> int:
    encoding = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_ENCODING
    path = words_path(encoding)
    words = encoding_words(encoding)
    path.write_text(format_words(words), encoding="ascii")
    print(f"{path}: {len(words)} words")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
