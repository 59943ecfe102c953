// Tokens of the filter language. Keywords are case-insensitive; positions are 1-based columns.
import { FilterError } from './ast.js';

export type TokenKind = 'ident' | 'string' | 'number' | 'datetime' | 'op' | 'punct' | 'eof';

export interface Token {
  kind: TokenKind;
  text: string;
  /** For ident: the lower-cased word (keyword matching); for string/datetime: the decoded value. */
  value: string;
  pos: number;
  /** A single-quoted identifier is never a keyword. */
  quoted?: boolean;
}

const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
const IDENT_START = /[A-Za-z_]/;
const IDENT_PART = /[A-Za-z0-9_.]/;

export function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const at = (p: number) => p + 1;
  while (i < src.length) {
    const ch = src[i];
    if (/\s/.test(ch)) {
      i++;
      continue;
    }
    const start = i;
    if ('()[],'.includes(ch)) {
      out.push({ kind: 'punct', text: ch, value: ch, pos: at(start) });
      i++;
    } else if (ch === '=' || ch === '<' || ch === '>' || ch === '!') {
      let op = ch;
      if (src[i + 1] === '=') op += '=';
      if (op === '!') throw new FilterError(at(start), "expected '!=' but found '!' alone");
      // Not an operator of the filter language (SQLite would take it for `=`, PostgreSQL refuses it).
      if (op === '==') throw new FilterError(at(start), "'==' is not an operator: compare with '='");
      out.push({ kind: 'op', text: op, value: op, pos: at(start) });
      i += op.length;
    } else if (ch === '"') {
      let value = '';
      i++;
      for (;;) {
        if (i >= src.length) throw new FilterError(at(start), 'this string is never closed: add the ending "');
        const c = src[i];
        if (c === '"') break;
        if (c === '\\') {
          const e = src[i + 1];
          if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(src.slice(i + 2, i + 6))) {
            value += String.fromCharCode(parseInt(src.slice(i + 2, i + 6), 16));
            i += 6;
            continue;
          }
          if (e === undefined || !Object.hasOwn(ESCAPES, e)) throw new FilterError(at(i), `unknown escape '\\${e ?? ''}' in string: use \\" \\\\ \\n \\r \\t \\f \\b or \\uXXXX`);
          value += ESCAPES[e];
          i += 2;
          continue;
        }
        value += c;
        i++;
      }
      i++;
      out.push({ kind: 'string', text: src.slice(start, i), value, pos: at(start) });
    } else if (ch === "'") {
      const end = src.indexOf("'", i + 1);
      if (end < 0) throw new FilterError(at(start), "this quoted field name is never closed: add the ending '");
      const name = src.slice(i + 1, end);
      if (!name) throw new FilterError(at(start), 'empty quoted field name');
      out.push({ kind: 'ident', text: src.slice(start, end + 1), value: name, pos: at(start), quoted: true });
      i = end + 1;
    } else if (/[0-9]/.test(ch) || (ch === '-' && /[0-9.]/.test(src[i + 1] ?? '')) || (ch === '.' && /[0-9]/.test(src[i + 1] ?? ''))) {
      const m = /^-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?/.exec(src.slice(i));
      if (!m) throw new FilterError(at(start), `'${src.slice(start, start + 3)}' is not a number`);
      i += m[0].length;
      if (i < src.length && IDENT_PART.test(src[i])) throw new FilterError(at(start), `'${src.slice(start, i + 1)}' is not a number`);
      out.push({ kind: 'number', text: m[0], value: m[0], pos: at(start) });
    } else if (IDENT_START.test(ch)) {
      while (i < src.length && IDENT_PART.test(src[i])) i++;
      const word = src.slice(start, i);
      if (word.toLowerCase() === 'datetime') {
        // datetime(2024-01-02T03:04:05Z): the argument is raw RFC 3339 text, quoted or not.
        let j = i;
        while (/\s/.test(src[j] ?? '')) j++;
        if (src[j] !== '(') throw new FilterError(at(j), "expected '(' after datetime");
        const close = src.indexOf(')', j);
        if (close < 0) throw new FilterError(at(j), "datetime( is never closed: add ')'");
        const raw = src.slice(j + 1, close).trim().replace(/^"(.*)"$/, '$1');
        out.push({ kind: 'datetime', text: src.slice(start, close + 1), value: raw, pos: at(start) });
        i = close + 1;
      } else {
        out.push({ kind: 'ident', text: word, value: word, pos: at(start) });
      }
    } else {
      throw new FilterError(at(start), `unexpected character '${ch}'`);
    }
  }
  out.push({ kind: 'eof', text: '', value: '', pos: src.length + 1 });
  return out;
}
