from __future__ import annotations

import re

from h2dlint.rule import Invalid, Rule, Valid
from h2dlint.suppression import UNUSED_NOQA


class UnusedNoqa(Rule):
    """
    ## What it does
    Finds h2dlint codes in `# noqa: ...` comments that suppress nothing: the code's
    rule found nothing on that line (*unused*), the rule is not enabled in this run
    (*non-enabled*), or no h2dlint rule has that code (*unknown*). Codes of other
    tools (`E501`, `F401`) and blanket `# noqa` comments are left alone: other
    linters may need them.

    Off by default, like Ruff's RUF100: enable it with `--extend-select HDL003`
    (or `extend-select = ["HDL003"]` in the configuration).

    ## Why is this bad?
    A stale `# noqa` hides the next real finding on that line, and tells readers
    that the line has a problem it no longer has.

    ## Example
    ```python
    x = torch.tensor([1, 2])  # noqa: HDL101
    ```

    Use instead:
    ```python
    x = torch.tensor([1, 2])
    ```

    ## Fix safety
    The fix removes only the unused h2dlint codes, or the whole `# noqa` directive
    when no code is left. It is safe: suppression comments do not change what the
    code does. No fix is offered when more text follows the directive in the same
    comment.

    ## References
    - Ruff: `unused-noqa` (RUF100)
    """

    code = UNUSED_NOQA
    name = "unused-noqa"
    summary = "a `# noqa` code that suppresses nothing"
    call_names = frozenset()
    prefilter = re.compile(r"(?!)")  # never visits code: the suppression step reports it
    default_enabled = False
    valid_examples = (
        Valid("x = 1  # noqa\n"),
        Valid("x = 1  # noqa: E501\n"),
        Valid('s = "# noqa: HDL101"\n'),
    )
    invalid_examples = (
        Invalid("x = 1  # noqa: HDL101\n", "x = 1\n", message_contains="HDL101 (non-enabled)"),
        Invalid("x = 1  # noqa: E501, HDL999\n", "x = 1  # noqa: E501\n", message_contains="HDL999 (unknown)"),
        Invalid("x = 1  # noqa: HDL101 kept for later\n", None),
    )
