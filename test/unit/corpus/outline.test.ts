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

  it('reads headings of lines ending \\r\\n, a setext heading of several lines whole, and no list item as one', () => {
    const crlf = outlineOf('# Alpha Title\r\n\r\nIntro.\r\n\r\n## Beta Section\r\n\r\nBody.');
    expect(crlf.headings.map((heading) => heading.title)).toEqual(['Alpha Title', 'Beta Section']);
    const setext = outlineOf('First line of a long\nheading here\n=====\n\n- list item\n---\n\ntext');
    expect(setext.headings.map(({ level, title }) => [level, title])).toEqual([
      [1, 'First line of a long heading here'],
    ]);
  });

  it('finds a heading path by search, not by walking every heading before it (230,000 headings)', () => {
    const text = '# h\n'.repeat(230_000) + '## last\nbody';
    const outline = outlineOf(text);
    let walked = 0;
    const counting = new Proxy(outline.headings, {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) walked += 1;
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
    expect(headingPathAt({ ...outline, headings: counting }, text.indexOf('body'))).toEqual(['h', 'last']);
    // A binary search and the path's depth: a few dozen reads, where a walk read all 230,001.
    expect(walked).toBeLessThan(100);
  });
});
