"""Known-answer tests of the answer extraction step (readouts/extract.py; issue 14).

Each row is a raw model output and the exact (answer, metadata) pair that the steps of the
module docstring give; the trailing comment is the derivation.  Shared by the choice and
SalBench parsers; also what mutation testing runs against extract.py.
"""

import pytest

from perceptbench.readouts.extract import extract_answer


def meta(reasoning=(), marker=None, n=0, null=None):
    return {"reasoning": list(reasoning), "answer_marker": marker, "n_answer_markers": n,
            "multiple_answer_markers": n > 1, "null_reason": null}


CASES = [
    # --- nulls -----------------------------------------------------------------------------
    (None, None, meta(null="empty_output")),  # no output
    ("  \n", None, meta(null="empty_output")),  # blank output
    ("<think>x", None, meta(["think"], null="unclosed_reasoning")),  # block never closed
    ("<think>a</think>  ", None, meta(["think"], null="empty_after_reasoning")),  # only whitespace after the block
    ("Mark 2? Answer:", None, meta(marker="answer", n=1, null="empty_answer_marker")),  # nothing after the last marker
    # --- reasoning blocks: removed text is replaced by one space -------------------------------
    ("<think>Mark 1?</think> 2", "  2", meta(["think"])),  # " " + " 2"
    ("Mark 1 is close to mark 3 ...</think>\n\n2", "\n\n2", meta(["think:implicit_open"])),  # close first
    ("<think>a</think>1</think> 2", " 2", meta(["think", "think:stray_close"])),  # text up to the last close goes
    # implicit open, then a block, then the stray close: "   2" = " " + "  2" after the last close
    ("Mark 1?</think> maybe 3</think> <think>no</think> 2", "   2",
     meta(["think:implicit_open", "think", "think:stray_close"])),
    # --- line markers: rest of the line, else the next non-empty line, cut at a sentence end ----
    ("The answer is 2", "2", meta(marker="answer", n=1)),  # "answer is" marker
    ("Answer: 2\n1 and 3 are orange\nDone", "2", meta(marker="answer", n=1)),  # only the marker's own line
    ("**Answer:**\n2", "2", meta(marker="answer", n=1)),  # "**" alone is markdown: next line
    ("Answer:\nThe odd one is 2.", "The odd one is 2", meta(marker="answer", n=1)),  # next line, cut at "."
    ("Answer:\n\nThe odd one is 2\nMarks 1 and 3 match.", "The odd one is 2", meta(marker="answer", n=1)),  # one line only
    ("Final answer:\n> \n> 2", "2", meta(marker="final answer", n=1)),  # "> " is blank markdown, "> 2" -> "2"
    ("The final answer is 3.", "3", meta(marker="final answer", n=1)),  # "final" inside "the final answer is"
    # --- tag markers and nesting ------------------------------------------------------------
    ("Answer: \\boxed{3}", "3", meta(marker="boxed", n=1)),  # boxed ends where the line marker's content ends: nested
    ("Answer: the answer is \\boxed{3}", "3", meta(marker="boxed", n=1)),  # three nested markers count once
    ("<answer>2</answer><answer>3</answer>", "3", meta(marker="<answer>", n=2)),  # back to back: two, the last stands
    ("<answer><b>B</b></answer>", "B", meta(marker="<answer>", n=1)),  # inner tags removed
]


@pytest.mark.parametrize("text,answer,want_meta", CASES)
def test_extract_answer_known_answers(text, answer, want_meta):
    assert extract_answer(text) == (answer, want_meta)


def test_an_unknown_parser_mode_is_named_in_the_error():
    from perceptbench.readouts.extract import answer_for_mode

    with pytest.raises(ValueError, match=r"mode must be one of .*'default'.*got 'loose'"):
        answer_for_mode("A", "loose")
