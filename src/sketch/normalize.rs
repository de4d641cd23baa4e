//! `--normalize`: steps applied to a document's decoded text before the default normalization
//! (lowercasing, tokens at Unicode white space; [`crate::sketch::tokenize`]), so that every
//! shingle, whatever cuts it, comes from the same text. docs/how-it-works.md defines each step;
//! this module is that definition.
//!
//! The steps run in one fixed order, whatever order they are given in: nfkc, accents, digits,
//! punct. Compatibility forms go first because they make characters the later steps act on
//! (`²` becomes `2`, a digit; `ﬁ` becomes `fi`); digits and punct act on disjoint characters.
//!
//! Speed: with no step the text is used as it is, with no copy and no pass over it. Otherwise
//! a stretch of ASCII is copied through a 128-entry table without a branch on the bytes (punct),
//! or a map the compiler vectorizes (digits alone), or as it is (nfkc and accents leave ASCII
//! alone: an ASCII text with only those steps is not even copied), and only the stretches
//! holding a byte from 0x80 go through the Unicode tables. A stretch is cut before an ASCII
//! character: one never composes with the character before it and is its own normal form, so
//! normalizing the pieces gives the normal form of the whole. The ASCII character just before
//! a non-ASCII stretch goes with it, since a combining mark may follow it (`e` + U+0301).

use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategory, GeneralCategoryGroup, UnicodeGeneralCategory};

/// One `--normalize` step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Unicode compatibility forms (NFKC).
    Nfkc,
    /// Diacritics removed: NFD, combining marks (Mn) dropped, NFC.
    Accents,
    /// Every decimal digit (Nd) becomes `0`.
    Digits,
    /// Punctuation (P*, and ASCII's symbols) removed.
    Punct,
}

impl Step {
    /// Every step, in the order they are applied.
    pub const ALL: [Step; 4] = [Step::Nfkc, Step::Accents, Step::Digits, Step::Punct];

    /// The step's name on the command line and in the report, the index and the plan.
    pub fn name(self) -> &'static str {
        match self {
            Step::Nfkc => "nfkc",
            Step::Accents => "accents",
            Step::Digits => "digits",
            Step::Punct => "punct",
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// A set of steps (none: the default normalization alone).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Normalize(pub(super) u8);

/// What the ASCII table maps a byte to when it is dropped (never an ASCII byte).
const DROP: u8 = 0xFF;

/// ASCII bytes under digits (`digits`) and punct (`punct`): the byte written, or [`DROP`].
const fn ascii_table(digits: bool, punct: bool) -> [u8; 128] {
    let mut t = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        t[b] = if digits && c.is_ascii_digit() {
            b'0'
        } else if punct && c.is_ascii_punctuation() {
            DROP
        } else {
            c
        };
        b += 1;
    }
    t
}

/// [`ascii_table`] under punct, without and with digits.
static PUNCT: [[u8; 128]; 2] = [ascii_table(false, true), ascii_table(true, true)];

impl Normalize {
    /// No step.
    pub const NONE: Normalize = Normalize(0);

    /// The steps listed, in any order, repeats allowed.
    pub fn from_steps(steps: impl IntoIterator<Item = Step>) -> Normalize {
        Normalize(steps.into_iter().fold(0, |bits, s| bits | s.bit()))
    }

    /// Whether `step` is one of the steps.
    pub fn has(self, step: Step) -> bool {
        self.0 & step.bit() != 0
    }

    /// True with no step.
    pub fn is_none(self) -> bool {
        self.0 == 0
    }

    /// The steps as the command line takes them, in the order applied (`nfkc,punct`), or
    /// `none`: one spelling for each set, so that two sets are equal when their names are.
    pub fn name(self) -> String {
        if self.is_none() {
            return "none".to_string();
        }
        let names: Vec<&str> = Step::ALL
            .iter()
            .filter(|s| self.has(**s))
            .map(|s| s.name())
            .collect();
        names.join(",")
    }

    /// `text` with the steps applied: `text` itself when they change nothing (no step, or an
    /// ASCII text under nfkc and accents only), else built in `buf`.
    pub fn apply<'t>(self, text: &'t str, buf: &'t mut Vec<u8>) -> &'t str {
        let (digits, punct) = (self.has(Step::Digits), self.has(Step::Punct));
        if self.is_none() || (!digits && !punct && text.is_ascii()) {
            return text;
        }
        buf.clear();
        buf.reserve(text.len());
        let bytes = text.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            let high = bytes[at..]
                .iter()
                .position(|b| !b.is_ascii())
                .map_or(bytes.len(), |p| at + p);
            // The ASCII character before a non-ASCII stretch goes with the stretch.
            let ascii_end = if high < bytes.len() && high > at {
                high - 1
            } else {
                high
            };
            let ascii = &bytes[at..ascii_end];
            if punct {
                compact(ascii, &PUNCT[usize::from(digits)], buf);
            } else if digits {
                // No byte is dropped: a plain map, which the compiler vectorizes.
                buf.extend(
                    ascii
                        .iter()
                        .map(|&b| if b.is_ascii_digit() { b'0' } else { b }),
                );
            } else {
                buf.extend_from_slice(ascii);
            }
            if high == bytes.len() {
                break;
            }
            let end = bytes[high..]
                .iter()
                .position(u8::is_ascii)
                .map_or(bytes.len(), |p| high + p);
            self.unicode(&text[ascii_end..end], buf);
            at = end;
        }
        // Whole characters and ASCII bytes were written, so this holds UTF-8; checking it is
        // one pass at several bytes a cycle, and saves an unsafe block.
        std::str::from_utf8(buf).unwrap_or(text)
    }

    /// The steps over any text through the Unicode tables, into `out`: what [`Normalize::apply`]
    /// does with a stretch holding bytes from 0x80.
    pub(super) fn unicode(self, stretch: &str, out: &mut Vec<u8>) {
        let unmarked = |c: &char| c.general_category() != GeneralCategory::NonspacingMark;
        match (self.has(Step::Nfkc), self.has(Step::Accents)) {
            (false, false) => self.per_char(stretch.chars(), out),
            (true, false) => self.per_char(stretch.nfkc(), out),
            (false, true) => self.per_char(stretch.nfd().filter(unmarked).nfc(), out),
            // NFD of an NFKC text is its NFKD.
            (true, true) => self.per_char(stretch.nfkd().filter(unmarked).nfc(), out),
        }
    }

    /// digits and punct, character by character.
    fn per_char(self, chars: impl Iterator<Item = char>, out: &mut Vec<u8>) {
        let (digits, punct) = (self.has(Step::Digits), self.has(Step::Punct));
        let mut utf8 = [0u8; 4];
        for c in chars {
            if punct && is_punctuation(c) {
                continue;
            }
            let c = if digits && is_decimal_digit(c) {
                '0'
            } else {
                c
            };
            out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
        }
    }
}

/// Appends the ASCII bytes `ascii` mapped by `table` to `out`, less those it maps to [`DROP`]:
/// each byte is written, and the end moves past it only when it is kept, so that no branch
/// depends on the text.
fn compact(ascii: &[u8], table: &[u8; 128], out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + ascii.len(), 0);
    let dst = &mut out[start..];
    let mut n = 0;
    for &b in ascii {
        let m = table[usize::from(b & 0x7F)];
        if let Some(d) = dst.get_mut(n) {
            *d = m;
        }
        n += usize::from(m != DROP);
    }
    out.truncate(start + n);
}

/// punct's characters: general category P* (connector, dash, open, close, initial, final and
/// other punctuation), and the 32 ASCII punctuation characters, which adds ASCII's 9 symbols
/// (`$ + < = > ^ ` | ~`), as POSIX `[:punct:]` and Python's `string.punctuation` do.
pub fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation()
        || (!c.is_ascii() && c.general_category_group() == GeneralCategoryGroup::Punctuation)
}

/// digits' characters: general category Nd (decimal digits of every script, `0`–`9`, `٣`,
/// `०`, `０`), not other numbers (`²`, `½`, `Ⅻ`; nfkc makes `²` a digit).
pub fn is_decimal_digit(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && c.general_category() == GeneralCategory::DecimalNumber)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(steps: &[Step], text: &str) -> String {
        let mut buf = Vec::new();
        Normalize::from_steps(steps.iter().copied())
            .apply(text, &mut buf)
            .to_string()
    }

    #[test]
    fn no_step_is_the_text_itself() {
        let mut buf = b"left alone".to_vec();
        let text = "Ünïcode, 123!";
        let got = Normalize::NONE.apply(text, &mut buf);
        assert!(std::ptr::eq(got, text));
        assert_eq!(Normalize::NONE.name(), "none");
    }

    #[test]
    fn ascii_text_is_not_copied_by_nfkc_and_accents() {
        let mut buf = Vec::new();
        let text = "Plain ASCII, 42.";
        let got = Normalize::from_steps([Step::Nfkc, Step::Accents]).apply(text, &mut buf);
        assert!(std::ptr::eq(got, text));
    }

    #[test]
    fn punct_removes_punctuation_and_ascii_symbols() {
        assert_eq!(
            norm(
                &[Step::Punct],
                "Don't stop—\"now\" (a+b=c), ¿qué? «oui» 「はい」、x_y $5 ~ok|"
            ),
            "Dont stopnow abc qué oui はいxy 5 ok"
        );
        // Symbols outside ASCII are kept: €, ©, ∑, the fraction slash.
        assert_eq!(norm(&[Step::Punct], "€5 © ∑ 1⁄2"), "€5 © ∑ 1⁄2");
    }

    #[test]
    fn digits_become_zero_in_every_script() {
        assert_eq!(
            norm(&[Step::Digits], "1999, ٣٤ and ०९ and ０７ but ² ½ Ⅻ"),
            "0000, 00 and 00 and 00 but ² ½ Ⅻ"
        );
    }

    #[test]
    fn accents_drops_nonspacing_marks_and_keeps_syllables_whole() {
        assert_eq!(
            norm(&[Step::Accents], "Éléphant café naïve Ångström İstanbul"),
            "Elephant cafe naive Angstrom Istanbul"
        );
        // Combining marks given apart, after an ASCII letter.
        assert_eq!(norm(&[Step::Accents], "e\u{301}te\u{301}"), "ete");
        // Hangul syllables stay whole (NFD takes them apart, NFC puts them back); ø and ß
        // have no decomposition and stay.
        assert_eq!(norm(&[Step::Accents], "한국어 ø ß"), "한국어 ø ß");
    }

    #[test]
    fn nfkc_folds_compatibility_forms() {
        assert_eq!(
            norm(&[Step::Nfkc], "ＦＵＬＬ ｗｉｄｔｈ ﬁne x² ①"),
            "FULL width fine x2 1"
        );
        // Composition of a letter and a combining mark.
        assert_eq!(norm(&[Step::Nfkc], "e\u{301}"), "é");
    }

    #[test]
    fn nfkc_comes_before_digits_and_punct() {
        assert_eq!(
            norm(&[Step::Punct, Step::Digits, Step::Nfkc], "x² ！？ ①"),
            "x0  0"
        );
        assert_eq!(norm(&[Step::Digits, Step::Punct], "x² ！？ ①"), "x²  ①");
    }

    #[test]
    fn the_order_of_the_list_does_not_matter() {
        let text = "Ｃafé, № ２０２４ — «naïve» ﬁles: 12½ İ!";
        let mut all = Step::ALL.to_vec();
        let want = norm(&all, text);
        assert_eq!(want, "Cafe No 0000  naive files 000⁄0 I");
        all.reverse();
        assert_eq!(norm(&all, text), want);
        assert_eq!(
            norm(
                &[
                    Step::Digits,
                    Step::Punct,
                    Step::Nfkc,
                    Step::Accents,
                    Step::Punct
                ],
                text
            ),
            want
        );
        assert_eq!(
            Normalize::from_steps([Step::Punct, Step::Nfkc]).name(),
            "nfkc,punct"
        );
    }

    #[test]
    fn stretches_cut_anywhere_give_the_whole_text_normalized() {
        // Non-ASCII at the start, the end, alone and in runs, next to ASCII punctuation.
        let text = "é.e\u{301}-ñ 1١!Ａ\u{301}a\u{308}\u{301}x—";
        for steps in 1..16u8 {
            let n = Normalize(steps);
            let mut buf = Vec::new();
            let got = n.apply(text, &mut buf).to_string();
            let mut whole = Vec::new();
            n.unicode(text, &mut whole);
            assert_eq!(got.as_bytes(), whole, "{}", n.name());
        }
    }
}
