#!/usr/bin/env python3
# test/docs/extract.py — the runnable blocks of one Markdown file, for
# test/docs/run.sh. A block is runnable when the line right before its
# opening fence (```sql or ```sh, indented or not) is
#
#     <!-- runnable -->            or    <!-- runnable: OPTION ... -->
#
# Options: db=postgres (run connected to postgres, not app), db=scratch (in
# a fresh empty database without the extension), $1=JSON (the block is one
# statement taking one parameter, as n8n sends it: run as PREPARE ... ;
# EXECUTE ...('JSON')). Usage: extract.py FILE OUTDIR → writes
# OUTDIR/NNN.{sql,sh} with the block (its fence's indentation removed) and
# prints one line per block: "NNN LINE LANG OPTIONS".
import json
import os
import re
import sys

MARK = re.compile(r'^\s*<!--\s*runnable(?::\s*(.*?))?\s*-->\s*$')
FENCE = re.compile(r'^(\s*)```(sql|sh)\s*$')


def main(path, outdir):
    lines = open(path, encoding='utf-8').read().split('\n')
    n = 0
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2)
        j = i + 1
        while j < len(lines) and not re.match(r'^\s*```\s*$', lines[j]):
            j += 1
        mark = MARK.match(lines[i - 1]) if i > 0 else None
        if mark:
            n += 1
            body = [l[len(indent):] if l.startswith(indent) else l.lstrip() for l in lines[i + 1:j]]
            opts = (mark.group(1) or '').strip()
            text = '\n'.join(body) + '\n'
            arg = re.search(r'\$1=(\{.*\}|\S+)', opts)
            if arg and lang == 'sql':
                code = '\n'.join(l for l in body if not l.strip().startswith('--')).strip()
                stmt = re.sub(r';\s*(--[^\n]*)?$', '', code)
                value = arg.group(1)
                json.loads(value)  # the option must be JSON
                text = 'PREPARE doc_block AS\n%s;\nEXECUTE doc_block(%s);\nDEALLOCATE doc_block;\n' % (
                    stmt, "'" + value.replace("'", "''") + "'")
                opts = re.sub(r'\$1=(\{.*\}|\S+)', '$1=...', opts)
            name = '%03d' % n
            with open(os.path.join(outdir, name + '.' + lang), 'w', encoding='utf-8') as f:
                f.write(text)
            print(name, i + 1, lang, opts or '-')
        i = j + 1


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
