"""The MATH verifier on answers written as a model writes them (reasoning first, LaTeX with braces, the answer
boxed last), not as this project's generators write them: every answer below is scored as a grader would, and
the majority vote (maj@k) counts the same answer as one vote whatever its wrapping."""

import pytest

from ablate.trainer.rewards import answer_given, verify_math
from ablate.trainer.tasks import Problem

pytest.importorskip("math_verify")

# (gold answer as MATH's solutions box it, completion, right?)
CORPUS = [
    ("\\frac{1}{2}", "Half of the pie is left, so the answer is $\\boxed{\\frac{1}{2}}$.", True),
    ("\\frac{1}{2}", "Simplifying, $\\boxed{\\dfrac{1}{2}}$.", True),
    ("\\frac{3}{4}", "So the probability is \\boxed{\\frac{1}{2}}.", False),
    ("2\\sqrt{3}", "The side is $\\sqrt{12} = \\boxed{2\\sqrt{3}}$.", True),
    ("\\sqrt{2}", "Hence $x = \\boxed{\\sqrt{3}}$.", False),
    ("(1, 2)", "The intersection point is $\\boxed{(1,2)}$.", True),
    ("[-2, 5)", "So $x \\in \\boxed{[-2,5)}$.", True),
    ("\\text{(B)}", "The correct choice is \\boxed{\\text{(B)}}.", True),
    ("30^\\circ", "The angle measures $\\boxed{30^\\circ}$.", True),
    ("25\\%", "The discount is $\\boxed{25\\%}$.", True),
    ("x^{2}+1", "Therefore $f(x) = \\boxed{x^{2}+1}$.", True),
    (
        "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
        "The product is $\\boxed{\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}}$.",
        True,
    ),  # fmt: skip
    ("7", "First guess: \\boxed{5}. Checking again, I made an error; it is \\boxed{7}.", True),
    ("5", "First guess: \\boxed{5}. Checking again, I made an error; it is \\boxed{7}.", False),
    ("42", "Adding them up gives 40 + 2 = 42", True),  # no box: the last number
    ("12", "The total is \\boxed{12}. Wait, let me also write \\boxed{", True),  # a cut-off last box
    ("\\frac{\\sqrt{3}}{2}", "$\\sin 60^\\circ = \\boxed{\\frac{\\sqrt{3}}{2}}$", True),
    ("\\{1, 2\\}", "The solution set is $\\boxed{\\{1,2\\}}$.", True),
]


@pytest.mark.parametrize("gold, completion, right", CORPUS)
def test_a_math_answer_is_scored_as_a_grader_would(gold, completion, right):
    v = verify_math(completion, Problem("q", gold))
    assert v.correct == float(right), (gold, completion)


def test_the_last_complete_box_is_the_answer_and_its_braces_are_balanced():
    assert answer_given("math", "so $\\boxed{\\frac{1}{2}}$", "\\boxed{", "}") == "\\frac{1}{2}"
    assert answer_given("math", "\\boxed{5} no: \\boxed{\\sqrt{7}}", "\\boxed{", "}") == "\\sqrt{7}"
    assert (
        answer_given("math", "\\boxed{12} and \\boxed{", "\\boxed{", "}") == "12"
    )  # the cut-off one is none
    assert answer_given("math", "1,000 apples", "\\boxed{", "}") == "1000"
    assert (
        answer_given("exact", "<abc> then <d>", "<", ">") == "abc"
    )  # the exact verifier: the first, as before


def test_the_vote_counts_one_answer_once_whatever_came_before_it():
    texts = ["\\boxed{\\frac{1}{2}}", "guess \\boxed{3}, then \\boxed{\\frac{1}{2}}", "\\boxed{\\frac{1}{3}}"]
    votes = [answer_given("math", t, "\\boxed{", "}") for t in texts]
    assert votes == ["\\frac{1}{2}", "\\frac{1}{2}", "\\frac{1}{3}"]
