// A line diff by longest common subsequence, for comparing two
// definitions' pretty-printed JSON (a few hundred lines at most, so the
// quadratic table is small).

// lineDiff returns the lines of a and b in order, each {op, line} with op
// ' ' (in both), '-' (only in a) or '+' (only in b). Example: a = [x, y, z],
// b = [x, z, w]: the LCS is [x, z], so the diff is ' x', '-y', ' z', '+w'.
export function lineDiff(a, b) {
  const n = a.length;
  const m = b.length;
  // lcs[i][j] is the LCS length of a[i:] and b[j:].
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      out.push({ op: ' ', line: a[i] });
      i++;
      j++;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) {
      out.push({ op: '-', line: a[i++] });
    } else {
      out.push({ op: '+', line: b[j++] });
    }
  }
  while (i < n) out.push({ op: '-', line: a[i++] });
  while (j < m) out.push({ op: '+', line: b[j++] });
  return out;
}

// prettyLines is a value's JSON, two-space indented, split in lines, with
// object keys sorted so that two definitions line up field by field.
export function prettyLines(value) {
  return JSON.stringify(sortKeys(value), null, 2).split('\n');
}

function sortKeys(value) {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    const sorted = {};
    for (const key of Object.keys(value).sort()) sorted[key] = sortKeys(value[key]);
    return sorted;
  }
  return value;
}
