import * as assert from 'assert';
import { bytes, code, escape, ratio } from '../src/markdown';

describe('markdown helpers', () => {
  it('escape neutralises emphasis, links, HTML, icons and line-start block syntax', () => {
    assert.strictEqual(escape('a *b* [c](d) <b>x</b> $(zap) &amp;'), 'a \\*b\\* \\[c\\]\\(d\\) \\<b\\>x\\</b\\> \\$\\(zap\\) \\&amp;');
    assert.strictEqual(escape('# title'), '\\# title');
    assert.strictEqual(escape('- item'), '\\- item');
    assert.strictEqual(escape('12. step'), '12\\. step');
    assert.strictEqual(escape('a\nb'), 'a b');
    assert.strictEqual(escape('+60,660 files, .git'), '\\+60,660 files, .git');
  });
  it('code keeps backticks inside the span', () => {
    assert.strictEqual(code('a'), '`a`');
    assert.strictEqual(code('a`b'), '``a`b``');
    assert.strictEqual(code('`a'), '`` `a ``');
  });
  it('formats sizes and ratios', () => {
    assert.strictEqual(bytes(640 * 1024 * 1024), '640 MB');
    assert.strictEqual(bytes(1536), '1.5 KB');
    assert.strictEqual(ratio(179.4), '×179');
    assert.strictEqual(ratio(1.04), '×1');
    assert.strictEqual(ratio(null), null);
    assert.strictEqual(ratio(Infinity), null);
  });
});
