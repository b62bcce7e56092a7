"""The paper layer: published results and claims next to ours, and the generated paper sources.

- `published`: reading paper/published/*.yaml and paper/claims.yaml
- `results`: our summaries and claims tables, and selecting trials from them
- `compare`: one published number against ours, with the agreement rules
- `claims`: the statistically tested claims of paper/claims.yaml
- `reproduction`: every verdict of the reproduction report
- `render`: the report as Markdown, HTML and JSON
- `numbers`, `latex`, `tables`, `pdf`: numbers.tex, generated LaTeX, table files, main.pdf

Every function works on what the caller read from the rule's declared inputs; none looks files up.
"""
