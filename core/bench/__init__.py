"""`moot bench`: a data set through protocols, each question × protocol an ordinary debate.

`datasets` reads questions (JSONL, or a built-in generator), `answers` extracts and compares
answers, `results` reads a finished debate into a result row, `stats` turns rows into the table
(accuracy, standard error, paired comparisons), `runner` plans and runs the debates (resumable)
through an executor (`executors`: local asyncio, or Ray), `output` writes JSON, markdown, CSV, SVG.
This file imports nothing, so the protocols can use `answers` without pulling in the runner.
"""
