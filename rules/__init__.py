"""The rule catalogue: one rule per module, installed as `h2dlint.rules`."""
