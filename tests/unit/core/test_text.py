"""Model text is normalised only where UTF-8 cannot encode it (issue 20 item 4)."""

import pytest

from perceptbench.core.text import model_text


@pytest.mark.parametrize("text, want", [
    ("The odd one out is 2 \ud83d", "The odd one out is 2 \ufffd"),   # a lone high half (a split emoji)
    ("\ude00 trailing", "\ufffd trailing"),                            # a lone low half
    ("a\ud83d\ude00b", "a\U0001f600b"),                                # a pair as two code points: joined
    ("\ude00\ud83d", "\ufffd\ufffd"),                                  # the halves in the wrong order: two lone
    ("\ud83d\ud83d\ude00", "\ufffd\U0001f600"),                        # a lone half before a pair
])
def test_surrogates_are_joined_or_replaced(text, want):
    assert model_text(text) == want
    want.encode("utf-8")  # storable


@pytest.mark.parametrize("text", ["", "B", "Ünïcödé 😀 \u0000 \ufffd", " \n\t"])
def test_text_utf8_can_encode_is_returned_unchanged(text):
    assert model_text(text) is text


def test_a_non_string_is_refused():
    with pytest.raises(TypeError, match="must be str"):
        model_text(None)


def test_counted_says_one_in_the_singular_and_every_other_count_in_the_plural():
    from perceptbench.core.text import counted

    assert counted(1, "error") == "1 error"
    assert [counted(n, "error") for n in (0, 2, 5)] == ["0 errors", "2 errors", "5 errors"]
    assert counted(1, "correct answer") == "1 correct answer"
    assert counted(3, "stimulus", "stimuli") == "3 stimuli"
    assert counted(1.0, "image") == "1 image"  # a whole float prints without decimals
