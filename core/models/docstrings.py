"""The docstring written under each attribute of a class (PEP 257's attribute docstrings), read
from its source when asked: the JSON Schema of a config file and the reference pages describe
each field with it.

pydantic can do this as each model is defined (`use_attribute_docstrings`), but then every
start-up reads and tokenizes the config models' source (a few hundredths of a second before
the first request); nothing but the schema and the docs reads those descriptions.
"""

from __future__ import annotations

import ast
import inspect


def attribute_docs(cls: type) -> dict[str, str]:
    """`cls`'s attribute docstrings and its bases' (moot's own classes), cleaned as pydantic
    cleans them; a class whose source cannot be read has none."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not klass.__module__.startswith("moot"):
            continue
        try:
            tree = ast.parse(inspect.getsource(klass))
        except (OSError, TypeError, SyntaxError):  # no source, or a class's source not parseable alone
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in zip(body, body[1:]):
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs
