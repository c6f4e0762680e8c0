"""The ``agentmem`` console command: run the local server and administer the stores.

One module per concern: :mod:`~agentmem.cli.parser` (the commands and their options), :mod:`~agentmem.cli.serving`
(``serve``, ``mcp``), :mod:`~agentmem.cli.admin` (the table, keys, the vector index, the engine),
:mod:`~agentmem.cli.erasures` (``erasures list|retry|since``) and :mod:`~agentmem.cli.store_options` (a command's
store options as settings). Each imports what a command needs when it runs: ``agentmem --help`` loads no AWS SDK,
model or server."""

from __future__ import annotations

from collections.abc import Sequence

from agentmem.cli.parser import build_parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.run(args))
