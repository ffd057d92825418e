//! The JSON byte scanning the crates share: where a string, a scalar or a whole value ends,
//! checked against the grammar as serde_json checks it, without building anything. The
//! analyzer's skimming reader reads views with it, the recorder finds identities and secrets
//! with it, and the replay server rewrites a `resourceVersion` in place with it. Each answers
//! [`Invalid`] where the text is not JSON it follows, and its caller then lets serde decide.
//!
//! Positions are byte indexes into the text. Strings are most of the bytes passed over, so
//! [`string_end`] looks at eight bytes at a time.

/// Not JSON this scanner follows (malformed, or a case it leaves to a parser).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invalid;

/// The bytes of `w` (little-endian) that are a quote, a backslash or a control character, as
/// their high bits. Bits above the lowest may be false (a borrow carries into the next byte), so
/// only the lowest is used: it is exact.
///
/// A byte below 0x80 is a quote when it minus 1 borrows after `^ '"'` makes it 0, a backslash
/// likewise, a control character when it minus 0x20 borrows; a byte from 0x80 is none of them,
/// and its high bit is the same after each `^` (both characters are ASCII): one `& !w` keeps the
/// three tests' bytes below 0x80, in one pass, where a test each took three more instructions.
#[inline(always)]
fn specials(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let quote = (w ^ (ONES * u64::from(b'"'))).wrapping_sub(ONES);
    let backslash = (w ^ (ONES * u64::from(b'\\'))).wrapping_sub(ONES);
    let control = w.wrapping_sub(ONES * 0x20);
    (quote | backslash | control) & !w & HIGH
}

/// The index of the first byte at or after `i` that is not whitespace. The API server writes
/// none: the first byte decides, inline, and only whitespace takes the loop.
#[inline(always)]
pub fn ws(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(b' ' | b'\n' | b'\r' | b'\t') => ws_run(b, i + 1),
        _ => i,
    }
}

#[inline(never)]
fn ws_run(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = b.get(i) {
        i += 1;
    }
    i
}

/// The index of the closing quote of the string whose text starts at `i`, and whether it has
/// escapes; escapes are checked (not decoded) and control characters refused, as serde_json
/// does.
///
/// Inline, the common case: eight bytes at a time to the first quote, backslash or control
/// character, and that is the closing quote. Strings are most of the bytes the reader passes
/// over (a hundred or so per object); a call per string cost a tenth of its instructions.
#[inline(always)]
pub fn string_end(b: &[u8], mut i: usize) -> Result<(usize, bool), Invalid> {
    while let Some(word) = b.get(i..i + 8) {
        let special = specials(u64::from_le_bytes(word.try_into().map_err(|_| Invalid)?));
        if special != 0 {
            i += (special.trailing_zeros() / 8) as usize;
            if b.get(i) == Some(&b'"') {
                return Ok((i, false));
            }
            break;
        }
        i += 8;
    }
    string_end_slow(b, i)
}

/// [`string_end`] from `i`: escapes, control characters and the last few bytes of the text.
#[inline(never)]
fn string_end_slow(b: &[u8], mut i: usize) -> Result<(usize, bool), Invalid> {
    let mut escaped = false;
    loop {
        match *b.get(i).ok_or(Invalid)? {
            b'"' => return Ok((i, escaped)),
            b'\\' => {
                escaped = true;
                match b.get(i + 1).ok_or(Invalid)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                    b'u' => {
                        let hex = b.get(i + 2..i + 6).ok_or(Invalid)?;
                        if !hex.iter().all(u8::is_ascii_hexdigit) {
                            return Err(Invalid);
                        }
                        i += 6;
                    }
                    _ => return Err(Invalid),
                }
            }
            0..=0x1f => return Err(Invalid),
            _ => i += 1,
        }
        // Eight bytes at a time again, to the next quote, backslash or control character.
        while let Some(word) = b.get(i..i + 8) {
            let special = specials(u64::from_le_bytes(word.try_into().map_err(|_| Invalid)?));
            if special != 0 {
                i += (special.trailing_zeros() / 8) as usize;
                break;
            }
            i += 8;
        }
    }
}

/// The text between a string's quotes with its escapes decoded, as serde_json decodes them
/// (the escapes were checked by [`string_end`]); a `\\u` escape of half a surrogate pair
/// without its other half gives up, and serde decides.
#[inline]
pub fn unescape(text: &str) -> Result<String, Invalid> {
    fn hex(b: &[u8], i: usize) -> Result<u32, Invalid> {
        let digits = std::str::from_utf8(b.get(i..i + 4).ok_or(Invalid)?).map_err(|_| Invalid)?;
        u32::from_str_radix(digits, 16).map_err(|_| Invalid)
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while let Some(at) = text.get(i..).and_then(|rest| rest.find('\\')) {
        out.push_str(&text[i..i + at]);
        i += at;
        let c = match *b.get(i + 1).ok_or(Invalid)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = hex(b, i + 2)?;
                i += 4;
                let code = match unit {
                    0xD800..=0xDBFF => {
                        if b.get(i + 2..i + 4) != Some(b"\\u") {
                            return Err(Invalid);
                        }
                        let low = hex(b, i + 4)?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err(Invalid);
                        }
                        i += 6;
                        0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    }
                    0xDC00..=0xDFFF => return Err(Invalid),
                    _ => unit,
                };
                char::from_u32(code).ok_or(Invalid)?
            }
            _ => return Err(Invalid),
        };
        out.push(c);
        i += 2;
    }
    out.push_str(text.get(i..).ok_or(Invalid)?);
    Ok(out)
}

/// A member's key (escapes allowed: it is not read) and its colon, from `i`: where its value
/// starts.
#[inline]
pub fn member_key(b: &[u8], i: usize) -> Result<usize, Invalid> {
    if b.get(i) != Some(&b'"') {
        return Err(Invalid);
    }
    let i = ws(b, string_end(b, i + 1)?.0 + 1);
    if b.get(i) != Some(&b':') {
        return Err(Invalid);
    }
    Ok(i + 1)
}

#[inline]
pub fn literal_end(b: &[u8], i: usize, word: &[u8]) -> Result<usize, Invalid> {
    if b.get(i..i + word.len()) != Some(word) {
        return Err(Invalid);
    }
    Ok(i + word.len())
}

/// The end of the literal or number at `i`, checked against the grammar; anything else there
/// is not a scalar.
#[inline(always)]
pub fn scalar_end(b: &[u8], i: usize) -> Result<usize, Invalid> {
    match *b.get(i).ok_or(Invalid)? {
        b't' => literal_end(b, i, b"true"),
        b'f' => literal_end(b, i, b"false"),
        b'n' => literal_end(b, i, b"null"),
        b'-' | b'0'..=b'9' => number_end(b, i),
        _ => Err(Invalid),
    }
}

/// The end of the JSON number at `i`, checked against the grammar.
#[inline]
pub fn number_end(b: &[u8], mut i: usize) -> Result<usize, Invalid> {
    let digits = |i: &mut usize| {
        let start = *i;
        while let Some(b'0'..=b'9') = b.get(*i) {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i) {
        Some(b'0') => {
            i += 1;
            if let Some(b'0'..=b'9') = b.get(i) {
                return Err(Invalid);
            }
        }
        Some(b'1'..=b'9') => {
            digits(&mut i);
        }
        _ => return Err(Invalid),
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return Err(Invalid);
        }
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return Err(Invalid);
        }
    }
    Ok(i)
}

/// The end of the value at `i` (after any whitespace), checked against the grammar, and
/// the deepest nesting inside it (0 for a scalar); a value nested deeper than `room`
/// (at most 128) is refused.
#[inline]
pub fn skip_value(b: &[u8], i: usize, room: u32) -> Result<(usize, u32), Invalid> {
    skip_value_with(b, i, room, &mut Forget)
}

/// What a skip remembers of the objects and arrays it checks, to take their end from it when
/// the same bytes come again instead of checking them once more ([`skip_value_with`]). An
/// object or array ends where its own bytes say: where the bytes at a place are those of a
/// value checked before, the value there is that value.
pub trait Recall {
    /// The end, and the deepest nesting inside it (at least 1), of the object or array that
    /// starts at `i` (its bracket), when its bytes are those of one remembered.
    fn recall(&mut self, b: &[u8], i: usize) -> Option<(usize, u32)>;
    /// An object or array opens at `i`.
    fn open(&mut self, i: usize);
    /// The innermost open object or array closed at `end` (after its bracket): checked whole.
    fn close(&mut self, b: &[u8], end: usize);
}

/// Remembers nothing: [`skip_value`].
struct Forget;

impl Recall for Forget {
    #[inline(always)]
    fn recall(&mut self, _: &[u8], _: usize) -> Option<(usize, u32)> {
        None
    }
    #[inline(always)]
    fn open(&mut self, _: usize) {}
    #[inline(always)]
    fn close(&mut self, _: &[u8], _: usize) {}
}

/// [`skip_value`], telling `recall` of each object and array it opens and closes, and taking
/// the end of one it remembers from it.
#[inline]
pub fn skip_value_with(
    b: &[u8],
    mut i: usize,
    room: u32,
    recall: &mut impl Recall,
) -> Result<(usize, u32), Invalid> {
    let room = room.min(128);
    let mut open: u128 = 0;
    let mut depth = 0u32;
    let mut deepest = 0u32;
    'value: loop {
        i = ws(b, i);
        match *b.get(i).ok_or(Invalid)? {
            b'"' => i = string_end(b, i + 1)?.0 + 1,
            c @ (b'{' | b'[') => {
                if let Some((end, inner)) = recall.recall(b, i) {
                    // Checked before, starting here it reaches `inner` deeper.
                    if depth + inner > room {
                        return Err(Invalid);
                    }
                    deepest = deepest.max(depth + inner);
                    i = end;
                } else {
                    depth += 1;
                    if depth > room {
                        return Err(Invalid);
                    }
                    deepest = deepest.max(depth);
                    let object = c == b'{';
                    open = open << 1 | u128::from(object);
                    recall.open(i);
                    i = ws(b, i + 1);
                    let close = if object { b'}' } else { b']' };
                    if b.get(i) == Some(&close) {
                        i += 1;
                        depth -= 1;
                        open >>= 1;
                        recall.close(b, i);
                    } else {
                        if object {
                            i = member_key(b, i)?;
                        }
                        continue 'value;
                    }
                }
            }
            _ => i = scalar_end(b, i)?,
        }
        // After a value: a comma and the next member, or the end of its container.
        loop {
            if depth == 0 {
                return Ok((i, deepest));
            }
            i = ws(b, i);
            let object = open & 1 == 1;
            match (*b.get(i).ok_or(Invalid)?, object) {
                (b',', true) => {
                    i = member_key(b, ws(b, i + 1))?;
                    continue 'value;
                }
                (b',', false) => {
                    i += 1;
                    continue 'value;
                }
                (b'}', true) | (b']', false) => {
                    i += 1;
                    depth -= 1;
                    open >>= 1;
                    recall.close(b, i);
                }
                _ => return Err(Invalid),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// True when serde_json reads `text` as one value.
    fn serde_reads(text: &str) -> bool {
        serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
    }

    /// The whole of `text` is one value, by [`skip_value`].
    fn skips(text: &str) -> bool {
        skip_value(text.as_bytes(), 0, 128)
            .is_ok_and(|(end, _)| ws(text.as_bytes(), end) == text.len())
    }

    #[test]
    fn strings_end_where_serde_says_and_only_valid_ones() {
        for text in [
            r#""""#,
            r#""plain text longer than eight bytes""#,
            r#""a\"b""#,
            r#""\\\/\b\f\n\r\t""#,
            r#""\u0041\u00e9""#,
            r#""é ✓ 中""#,
            "\"tab\there\"",
            r#""\q""#,
            r#""\u12""#,
            r#""unterminated"#,
            r#""ends in a backslash\""#,
        ] {
            let b = text.as_bytes();
            let ours = string_end(b, 1).ok().map(|(end, _)| end + 1 == b.len());
            assert_eq!(ours == Some(true), serde_reads(text), "{text}");
        }
        assert_eq!(string_end(br#""a\"b" x"#, 1), Ok((5, true)));
        assert_eq!(string_end(br#""abcdefghij" x"#, 1), Ok((11, false)));
    }

    /// The lowest byte [`specials`] flags is the first quote, backslash or control character of
    /// the word, byte by byte, whatever the other bytes are: every byte value at every place
    /// among bytes on both sides of each class (and the high ones, which are none of them).
    #[test]
    fn the_first_special_byte_of_a_word_is_the_one_flagged() {
        let first = |w: [u8; 8]| w.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
        let flagged = |w: [u8; 8]| match specials(u64::from_le_bytes(w)) {
            0 => None,
            m => Some((m.trailing_zeros() / 8) as usize),
        };
        let fillers = [
            0x00, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x5b, 0x5c, 0x5d, 0x7f, 0x80, 0xa0, 0xa2, 0xdc,
            0xff,
        ];
        let mut checked = 0;
        for at in 0..8 {
            for c in 0..=255u8 {
                for &fill in &fillers {
                    for &after in &fillers {
                        let mut w = [fill; 8];
                        w[at] = c;
                        for b in w.iter_mut().skip(at + 1) {
                            *b = after;
                        }
                        assert_eq!(flagged(w), first(w), "{w:02x?}");
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 8 * 256 * fillers.len() * fillers.len());
    }

    #[test]
    fn scalars_follow_the_grammar_serde_follows() {
        for text in [
            "0", "-0", "7", "-12", "1.5", "1e5", "1E+5", "1e-5", "-0.0e0", "01", "1.", ".5", "-",
            "1e", "+1", "true", "false", "null", "tru", "nul", "NaN",
        ] {
            let ours = scalar_end(text.as_bytes(), 0).is_ok_and(|end| end == text.len());
            assert_eq!(ours, serde_reads(text), "{text}");
        }
    }

    #[test]
    fn values_are_skipped_where_serde_reads_them_and_refused_where_it_does_not() {
        let valid = [
            "{}",
            "[]",
            r#"{"a":[1,{"b":null}],"c":"d"}"#,
            " { \"a\" : [ 1 , 2 ] , \"b\" : { } } ",
            r#"[[[[["deep"]]]]]"#,
        ];
        let invalid = [
            "{",
            "[1,]",
            r#"{"a":}"#,
            r#"{"a" 1}"#,
            r#"{"a":1,}"#,
            "[1 2]",
            r#"{1:2}"#,
            "}",
            r#"{"a":1}}"#,
        ];
        for text in valid {
            assert!(skips(text) && serde_reads(text), "{text}");
        }
        for text in invalid {
            assert!(!skips(text) && !serde_reads(text), "{text}");
        }
        assert_eq!(skip_value(b"[[1],[[2]]]", 0, 128), Ok((11, 3)));
        // Nesting past the room left is refused.
        assert!(skip_value(b"[[[1]]]", 0, 3).is_ok());
        assert_eq!(skip_value(b"[[[1]]]", 0, 2), Err(Invalid));
    }

    #[test]
    fn escapes_decode_as_serde_decodes_them() {
        for quoted in [
            r#""a\"b""#,
            r#""\u00e9\ud83d\ude00""#,
            r#""\n\t\/""#,
            r#""\ud83d""#,
        ] {
            let inner = &quoted[1..quoted.len() - 1];
            assert_eq!(
                unescape(inner).ok(),
                serde_json::from_str::<String>(quoted).ok(),
                "{quoted}"
            );
        }
    }
}
