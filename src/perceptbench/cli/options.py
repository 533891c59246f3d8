"""Options several commands share: the answer parser mode and ``--family`` (help texts and checks)."""

from __future__ import annotations

from .errors import fail

PARSER_HELP = ("Answer parser mode: default (reasoning blocks stripped, the last answer marker stands, "
               "first option named counts); strict (as default, ambiguous answers are null); seed (the seed "
               "paper's literal rule over the raw output).")

FAMILY_HELP = "MODEL=FAMILY (repeatable): model families for the VSI same- vs cross-family agreement means."


def check_parser(mode: str) -> None:
    """Exit with a one-line error unless ``mode`` is a parser mode (:func:`perceptbench.api.check_parser`)."""
    from ..api import check_parser as check

    try:
        check(mode)
    except ValueError as e:
        fail(e)


def families_option(specs) -> dict[str, str]:
    """``--family`` values -> ``{MODEL: FAMILY}``; exits with a one-line error for a malformed one."""
    from ..api import parse_families

    try:
        return parse_families(specs or ())
    except ValueError as e:
        fail(e)
