import { describe, expect, it } from 'vitest';
import { headingPathAt, outlineOf, pageAt } from '../../../src/corpus/index.js';

/** The structure a text carries (docs/documents.md): headings as Markdown writes them, page breaks as form feeds. */
describe('outline', () => {
  it('reads ATX and setext headings with their levels, and nothing inside fenced code', () => {
    const text = [
      '# Title #',
      'Intro.',
      '',
      'Setext two',
      '----------',
      '~~~',
      '# not a heading',
      '```',
      '~~~',
      '### Deep',
      'Body.',
      '  ## Indented two',
      '####### seven is text',
      '#hashtag is text',
    ].join('\n');
    const titles = outlineOf(text).headings.map(({ level, title }) => [level, title]);
    expect(titles).toEqual([
      [1, 'Title'],
      [2, 'Setext two'],
      [3, 'Deep'],
      [2, 'Indented two'],
    ]);
    expect(headingPathAt(outlineOf(text), text.indexOf('Body.'))).toEqual(['Title', 'Setext two', 'Deep']);
    expect(headingPathAt(outlineOf(text), text.indexOf('seven'))).toEqual(['Title', 'Indented two']);
    expect(headingPathAt(outlineOf(text), 0)).toEqual([]);
  });

  it('counts pages by form feeds, none in code; a text without them has no pages', () => {
    const text = 'one\n\f\ntwo\n```\n\f\n```\nstill two\n\f\nthree';
    const outline = outlineOf(text);
    expect(outline.breaks).toHaveLength(2);
    expect(['one', 'two', 'still two', 'three'].map((words) => pageAt(outline, text.indexOf(words)))).toEqual([
      1, 2, 2, 3,
    ]);
    expect(pageAt(outlineOf('no pages here'), 3)).toBeUndefined();
  });
});
