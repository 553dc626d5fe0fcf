"""The hostile corpus: its representative subset runs by default, the whole corpus is
``slow`` (``pytest -m slow tests/hostile``); ``-m hostile`` selects both."""
