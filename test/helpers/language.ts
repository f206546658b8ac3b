// Every text a client reads is Brazilian Portuguese (issue 18): a check for English prose. It looks
// for words that nearly every English sentence has and Portuguese prose never does ("the", "of",
// "and", "is", "with", "only", and the verbs English summaries start with). What is not prose is left
// out: code spans (`…`), placeholders (<…>), identifiers (anything with _ . - / = : or digits, such
// as field names, header names and media types) and words in capitals (HTTP methods).
const ENGLISH = new Set([
  'the', 'of', 'and', 'or', 'is', 'are', 'was', 'be', 'been', 'not', 'with', 'without', 'to', 'from', 'by', 'at', 'on',
  'in', 'into', 'when', 'only', 'this', 'that', 'these', 'those', 'each', 'every', 'any', 'all', 'its', 'it', 'which',
  'after', 'before', 'than', 'then', 'an', 'if', 'has', 'have', 'can', 'may', 'must', 'will', 'would', 'your', 'you',
  'their', 'there', 'here', 'one', 'new', 'up', 'list', 'lists', 'view', 'create', 'creates', 'change', 'changes',
  'check', 'post', 'read', 'page', 'get', 'returns', 'answers', 'sent', 'send', 'per', 'none', 'always', 'never',
]);

/** The English words found in a text meant for the reader (empty when it reads as Portuguese). */
export function englishWords(text: string): string[] {
  const prose = text.replace(/`[^`]*`/g, ' ').replace(/<[^>]*>/g, ' ');
  return prose
    .split(/\s+/)
    .map((token) => token.replace(/^[("'“«[]+|[)"'”».,;:!?…\]]+$/g, ''))
    .filter((word) => /^[A-Za-zÀ-ÿ]+$/.test(word) && word !== word.toUpperCase())
    .filter((word) => ENGLISH.has(word.toLowerCase()) && (word === word.toLowerCase() || word.slice(1) === word.slice(1).toLowerCase()));
}

/** Every string at a key named summary, description or title in a document, with where it is. */
export function readerTexts(node: unknown, at = ''): { at: string; text: string }[] {
  if (Array.isArray(node)) return node.flatMap((item, i) => readerTexts(item, `${at}/${i}`));
  if (node === null || typeof node !== 'object') return [];
  return Object.entries(node).flatMap(([key, value]) =>
    typeof value === 'string' && ['summary', 'description', 'title'].includes(key)
      ? [{ at: `${at}/${key}`, text: value }]
      : readerTexts(value, `${at}/${key}`));
}

/** The texts among them that read as English, as "where: words found: text". */
export function inEnglish(texts: readonly { at: string; text: string }[]): string[] {
  return texts.flatMap(({ at, text }) => {
    const found = englishWords(text);
    return found.length ? [`${at}: ${found.join(', ')}: ${text}`] : [];
  });
}
