// What the translator box says about the reader's text before it is translated: empty,
// too long, markup, emoji. Pure functions (no page, no model), so that the tests can
// run them under node as well as in the browser.
export const MAX_CHARACTERS = 2000;

// {error, notes, text}: error (a message, nothing to translate) or notes and the text
// that will be translated (cut at MAX_CHARACTERS)
export function inputNotes(text) {
  const notes = [];
  if (!text.trim()) return { error: "Type a German sentence first (the box is empty).", notes };
  if (text.length > MAX_CHARACTERS) {
    notes.push(`Your text had ${text.length} characters; only the first ${MAX_CHARACTERS} were read.`);
    text = text.slice(0, MAX_CHARACTERS);
  }
  if (/<\/?[a-z!][^>]*>/i.test(text)) notes.push("Markup such as <script> is translated as plain text: nothing you type is run or inserted as HTML.");
  if (/\p{Extended_Pictographic}/u.test(text)) notes.push("Emoji are not in the model's vocabulary: each becomes <unk>.");
  return { error: null, notes, text };
}

// The out-of-domain signal: the share of the words that BPE cuts into three pieces or
// more. The model learned German image captions (Multi30k), whose words its vocabulary
// mostly holds whole; news, law or science German falls apart into many pieces.
// Measured by tests/test_browser_input.py on val + test2016 (2,014 captions: about 2 %
// of them reach it) and the 20 news sentences of tests/data/news_de.txt (all reach it).
export const RARE_SHARE = 0.3;
export function splitShare(tokens) {
  const words = [];
  for (const t of tokens) {
    if (t.startsWith("\u2581") || !words.length) words.push([t]);
    else words[words.length - 1].push(t);
  }
  const real = words.filter((w) => /[\p{L}\p{N}]/u.test(w.join("")));
  const split = real.filter((w) => w.length >= 3).length;
  return { words: real.length, split, share: real.length ? split / real.length : 0 };
}
export function domainNote(tokens) {
  const { words, split, share } = splitShare(tokens);
  if (split < 2 || share < RARE_SHARE) return null;
  return `${split} of your ${words} words are rare for this model (cut into 3 or more pieces): it learned from image captions only (Multi30k), so text about other things (news, science, law) usually comes out wrong.`;
}
