//! The fast path of [`Prepared::of`](crate::Prepared::of): a hand-written reader of the JSON
//! objects detectors read, for the shapes the API server writes.
//!
//! The serde views in [`view`](crate::input::view) define what is read; this module reads the same
//! fields in one pass, skipping everything else without building it. It gives up ([`Bail`]) on
//! anything it does not handle exactly as serde would: an escaped key, a duplicate field, a
//! value of an unexpected type, a number that is not a plain integer, nesting deeper than
//! [`MAX_DEPTH`]. The caller then parses the object with serde, which decides, and words any
//! error. So whenever this reader returns a view, it is the view serde would have built (the
//! tests check that on every object of the scripted incidents and of a scale recording, and on
//! mutated objects), and invalid JSON anywhere in an object, read or skipped, still makes it
//! unreadable.
//!
//! Why: parsing was about half of `analyze`'s CPU time, most of it spent on fields no detector
//! reads (`managedFields`, pod specs, status details), which serde_json validates token by
//! token through its generic visitor machinery.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use compact_str::ToCompactString;
use rf_format::Kind;
use serde::de::{DeserializeOwned, IgnoredAny};

use crate::base::Str;
use crate::base::time::parse_rfc3339;
use crate::input::view::{
    AppHealth, AppHelm, AppHistory, AppInitiator, AppOperation, AppOperationState,
    AppOperationSync, AppParameter, AppResource, AppResultResource, AppSource, AppStatus, AppSync,
    AppSyncResult, ApplicationView, BlueGreen, BlueGreenStatus, Canary, CanaryStatus, Condition,
    Container, ContainerStatus, DeploymentView, Endpoint, EndpointConditions, EndpointSliceView,
    EphemeralMetadata, GatewayApiRoute, GatewayApiRouting, IstioDestinationRule, IstioRouting,
    IstioVirtualService, Kept, KeptKeys, LastManagers, Meta, NginxRouting, OwnerRef,
    PauseCondition, PodCondition, PodLabels, PodSpec, PodStatus, PodView, RawJson, ReplicaSetView,
    RolloutSpec, RolloutStatus, RolloutView, RouterPlugins, RsSpec, RsStatus, SelectorFields,
    ServiceManager, ServiceSpec, ServiceView, Skipped, SpecFields, Step, Strategy, TargetRef,
    TrafficRouting, WeightDest, Weights, WorkloadRef, condition_kept,
};

/// This reader does not decide: serde does.
pub(crate) use rf_format::json::Invalid as Bail;
use rf_format::json::{Recall, literal_end, scalar_end, skip_value_with, string_end, unescape, ws};

type R<T> = Result<T, Bail>;

/// Deeper nesting is left to serde (whose own limit is 128).
const MAX_DEPTH: u32 = 100;

thread_local! {
    /// The objects and arrays this thread's reader passed over lately.
    static SEEN: std::cell::RefCell<Seen> = std::cell::RefCell::default();
}

/// Reads `text` as one JSON value with `read`, or gives up.
pub(crate) fn read<'a, T>(text: &'a str, read: impl FnOnce(&mut Json<'a>) -> R<T>) -> Option<T> {
    read_with(text, &mut Known::default(), read)
}

/// [`read`], with `known`: a pod template this object had, which the template of `text` is
/// compared with before it is read (see [`Known`]); it is then the template of `text`.
pub(crate) fn read_with<'a, T>(
    text: &'a str,
    known: &mut Known,
    read: impl FnOnce(&mut Json<'a>) -> R<T>,
) -> Option<T> {
    let mut j = Json {
        s: text,
        b: text.as_bytes(),
        i: 0,
        depth: 0,
        known: std::mem::take(known),
        seen: SEEN.with_borrow_mut(std::mem::take),
    };
    let v = read(&mut j);
    *known = std::mem::take(&mut j.known);
    SEEN.with_borrow_mut(|seen| *seen = std::mem::take(&mut j.seen));
    let v = v.ok()?;
    j.ws();
    (j.i == j.b.len()).then_some(v)
}

/// The last pod template read of an object (a Rollout's or a ReplicaSet's, most of its bytes),
/// as checked JSON text and the deepest nesting it fits at. A template changes only with a new
/// revision: when the next object of the same name holds these bytes at its template, they are
/// the same valid value (an object, array or string ends where its own bytes say; a known number
/// that starts a longer one leaves a digit where a comma should be, and the reader gives up),
/// and one comparison replaces reading them again.
#[derive(Debug, Default)]
pub(crate) struct Known {
    text: Vec<u8>,
    /// The deepest nesting at which the text, starting there, is the same value (deeper, its
    /// own nesting would pass [`MAX_DEPTH`]).
    fits: u32,
    /// A Rollout's `spec.strategy` last read: its text, the deepest nesting it fits at, and its
    /// view. The same bytes are the same strategy (almost every record of a Rollout is a status
    /// write): its view is shared rather than read again.
    strategy: Option<Item<Arc<Strategy>>>,
    /// A Rollout's `managedFields` entries last read.
    managers: Items<Option<Manager>>,
    /// A Rollout's `status.conditions` last read.
    conditions: Items<Option<Condition>>,
    /// An EndpointSlice's endpoints last read.
    endpoints: Elements<Arc<Endpoint>>,
    /// Whether the labels and annotations are kept too: only for an object whose `Known` is
    /// kept from one version to the next (a fresh one would copy them for nothing).
    keeps_metadata: bool,
    /// The object's labels last read.
    labels: Option<Item<Kept<crate::input::view::Labels>>>,
    /// The object's annotations last read.
    annotations: Option<Item<Kept<crate::input::view::Annotations>>>,
    /// An Application's `status.history` last read.
    app_history: Option<Item<Arc<Vec<AppHistory>>>>,
    /// An Application's `status.resources` last read.
    app_resources: Option<Item<Arc<Vec<AppResource>>>>,
    /// An Application's `status.operationState` last read.
    app_operation: Option<Item<Option<Arc<AppOperationState>>>>,
}

impl Known {
    /// What is known of an object kept from one version to the next: its labels and
    /// annotations too (they change far less often than each write).
    pub(crate) fn kept() -> Known {
        Known {
            keeps_metadata: true,
            ..Known::default()
        }
    }
}

impl Known {
    /// The bytes of the template, strategy and array elements held.
    pub(crate) fn bytes(&self) -> usize {
        self.text.len()
            + known_bytes(&self.strategy)
            + item_bytes(&self.managers)
            + item_bytes(&self.conditions)
            + self.endpoints.bytes()
            + known_bytes(&self.labels)
            + known_bytes(&self.annotations)
            + known_bytes(&self.app_history)
            + known_bytes(&self.app_resources)
            + known_bytes(&self.app_operation)
    }
}

/// The elements of an array an object had at its last read (a Rollout's `managedFields`
/// entries, its conditions), in order, each with its text and what was read of it. A write
/// changes one or two of them (the time of its manager's entry, the condition it moves): an
/// element of the next version that holds the same bytes as the one at the same place here is
/// the same value (as for [`Known`]'s template), and what was read of it is taken again.
type Items<T> = Vec<Item<T>>;

/// An element of [`Items`], or a value of [`Known`] ([`Json::known_value`]): its text and what
/// was read of it.
#[derive(Debug)]
pub(crate) struct Item<T> {
    text: Vec<u8>,
    /// The deepest nesting it was read at: read there, it reads the same at most as deep.
    fits: u32,
    read: T,
}

/// The bytes of a value's text, if one is known.
fn known_bytes<T>(known: &Option<Item<T>>) -> usize {
    known.as_ref().map_or(0, |k| k.text.len())
}

/// The bytes of the elements' texts.
fn item_bytes<T>(items: &Items<T>) -> usize {
    items
        .iter()
        .map(|i| i.text.len() + std::mem::size_of::<Item<T>>())
        .sum()
}

/// What is read of a `managedFields` entry: its time, whether it is of the status
/// subresource, and its manager (`None`: an entry without a readable time, which counts for
/// nothing).
#[derive(Debug, Clone)]
pub(crate) struct Manager {
    time: i64,
    on_status: bool,
    name: Str,
}

/// A cursor over JSON text.
pub(crate) struct Json<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
    depth: u32,
    known: Known,
    seen: Seen,
}

/// The objects and arrays of at least [`Seen::MIN`] bytes a thread's reader passed over
/// lately, each as its text and the deepest nesting inside it ([`Recall`]): where the next
/// object's bytes at a place are one of them, the value there is that one, already checked,
/// and one comparison replaces checking it again. Most of what the reader passes over repeats
/// from one object to the next: the `fieldsV1` of each `managedFields` entry (the fields a
/// manager owns, the same for every pod of a template and every write of a controller), where
/// the entry around it changes with the time of each write.
///
/// Held in sets of [`Seen::WAYS`], most recently found first, chosen by a hash of the first
/// [`Seen::PREFIX`] bytes; a text longer than [`Seen::MAX`] is not held, so a thread holds at
/// most `SETS × WAYS × MAX` bytes (4 MiB).
#[derive(Default)]
pub(crate) struct Seen {
    /// `SETS × WAYS` entries once one is held, none before.
    held: Vec<SeenValue>,
    /// The objects and arrays open in the value being passed over, outermost first.
    open: Vec<Open>,
}

#[derive(Default)]
struct SeenValue {
    /// The hash of the text's first [`Seen::PREFIX`] bytes, never 0; 0 for no text.
    tag: u64,
    /// The deepest nesting inside the value.
    inner: u32,
    text: Vec<u8>,
}

/// An object or array open while a value is passed over.
struct Open {
    start: usize,
    /// The deepest nesting inside it so far (itself: 1).
    inner: u32,
    /// False once a value inside it was recalled: it holds a value that repeats and text
    /// that does not (a `managedFields` entry around its `fieldsV1`), and is not held.
    hold: bool,
}

impl Seen {
    const SETS: usize = 256;
    const WAYS: usize = 4;
    const PREFIX: usize = 32;
    const MIN: usize = 32;
    const MAX: usize = 4096;

    /// The tag of a text that starts with `prefix`.
    fn tag(prefix: &[u8; Self::PREFIX]) -> u64 {
        let word = |k: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&prefix[k..k + 8]);
            u64::from_le_bytes(w)
        };
        let mix = |a: u64, b: u64| {
            let r = u128::from(a) * u128::from(b);
            (r as u64) ^ ((r >> 64) as u64)
        };
        let h = mix(
            word(0) ^ 0x243f_6a88_85a3_08d3,
            word(8) ^ 0x1319_8a2e_0370_7344,
        ) ^ mix(
            word(16) ^ 0xa409_3822_299f_31d0,
            word(24) ^ 0x082e_fa98_ec4e_6c89,
        );
        h | 1
    }

    /// The entries of the set of `tag`.
    fn set(&mut self, tag: u64) -> &mut [SeenValue] {
        let at = (tag >> 40) as usize % Self::SETS * Self::WAYS;
        &mut self.held[at..at + Self::WAYS]
    }

    /// Forgets the values open in a value passed over before (one refused midway).
    fn begin(&mut self) {
        self.open.clear();
    }
}

impl Recall for Seen {
    #[inline]
    fn recall(&mut self, b: &[u8], i: usize) -> Option<(usize, u32)> {
        let prefix: &[u8; Self::PREFIX] = b.get(i..i + Self::PREFIX)?.try_into().ok()?;
        // An empty one is not held: no need to hash.
        if matches!(prefix[1], b'}' | b']') || self.held.is_empty() {
            return None;
        }
        let tag = Self::tag(prefix);
        let set = self.set(tag);
        let way = set
            .iter()
            .position(|v| v.tag == tag && b.get(i..i + v.text.len()) == Some(&v.text[..]))?;
        set[..=way].rotate_right(1);
        let (end, inner) = (i + set[0].text.len(), set[0].inner);
        if let Some(parent) = self.open.last_mut() {
            parent.inner = parent.inner.max(inner + 1);
            parent.hold = false;
        }
        Some((end, inner))
    }

    #[inline]
    fn open(&mut self, i: usize) {
        self.open.push(Open {
            start: i,
            inner: 1,
            hold: true,
        });
    }

    #[inline]
    fn close(&mut self, b: &[u8], end: usize) {
        let Some(closed) = self.open.pop() else {
            return;
        };
        if let Some(parent) = self.open.last_mut() {
            parent.inner = parent.inner.max(closed.inner + 1);
            parent.hold &= closed.hold;
        }
        if !closed.hold || !(Self::MIN..=Self::MAX).contains(&(end - closed.start)) {
            return;
        }
        let Some(text) = b.get(closed.start..end) else {
            return;
        };
        let Some(prefix) = text.first_chunk::<{ Self::PREFIX }>() else {
            return;
        };
        if self.held.is_empty() {
            self.held
                .resize_with(Self::SETS * Self::WAYS, SeenValue::default);
        }
        let tag = Self::tag(prefix);
        let set = self.set(tag);
        set.rotate_right(1);
        let v = &mut set[0];
        v.tag = tag;
        v.inner = closed.inner;
        v.text.clear();
        v.text.extend_from_slice(text);
    }
}

/// Marks field `bit` as seen; a second time is a duplicate field, which serde refuses.
fn once(seen: &mut u32, bit: u32) -> R<()> {
    if *seen & (1 << bit) != 0 {
        return Err(Bail);
    }
    *seen |= 1 << bit;
    Ok(())
}

impl<'a> Json<'a> {
    fn ws(&mut self) {
        self.i = ws(self.b, self.i);
    }

    /// The next byte after whitespace, not consumed.
    fn peek(&mut self) -> R<u8> {
        self.ws();
        self.b.get(self.i).copied().ok_or(Bail)
    }

    fn eat(&mut self, c: u8) -> R<()> {
        if self.peek()? != c {
            return Err(Bail);
        }
        self.i += 1;
        Ok(())
    }

    fn literal(&mut self, word: &[u8]) -> R<()> {
        self.i = literal_end(self.b, self.i, word)?;
        Ok(())
    }

    /// Consumes a `null` if one is next.
    fn null(&mut self) -> R<bool> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Ok(true);
        }
        Ok(false)
    }

    fn enter(&mut self, open: u8) -> R<()> {
        self.eat(open)?;
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Bail);
        }
        Ok(())
    }

    /// An object: `member` is called with each key and must consume its value.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> R<()>) -> R<()> {
        self.sequence(b'{', b'}', |j| {
            let key = j.key()?;
            j.eat(b':')?;
            member(j, key)
        })
    }

    /// An array: `element` is called for each element and must consume it.
    fn array(&mut self, element: impl FnMut(&mut Self) -> R<()>) -> R<()> {
        self.sequence(b'[', b']', element)
    }

    /// `open`, items separated by commas (`item` consumes one), `close`.
    fn sequence(&mut self, open: u8, close: u8, mut item: impl FnMut(&mut Self) -> R<()>) -> R<()> {
        self.enter(open)?;
        if self.peek()? != close {
            loop {
                item(self)?;
                match self.peek()? {
                    b',' => self.i += 1,
                    c if c == close => break,
                    _ => return Err(Bail),
                }
            }
        }
        self.i += 1;
        self.depth -= 1;
        Ok(())
    }

    /// A key without escapes (serde would unescape it before matching: left to serde).
    /// Inline, as [`string_body`](Json::string_body) is: every member's key is read here.
    #[inline(always)]
    fn key(&mut self) -> R<&'a str> {
        let (text, escaped) = self.string_body()?;
        if escaped {
            return Err(Bail);
        }
        Ok(text)
    }

    /// The raw text between the quotes of the string that is next, and whether it has escapes.
    /// Inline: it reads every key and string (five million in the 100k-record bench file), and
    /// a call cost a sixth of it.
    #[inline(always)]
    fn string_body(&mut self) -> R<(&'a str, bool)> {
        self.eat(b'"')?;
        let start = self.i;
        let (end, escaped) = string_end(self.b, start)?;
        // Quotes are ASCII: both ends are on character boundaries.
        let text = self.s.get(start..end).ok_or(Bail)?;
        self.i = end + 1;
        Ok((text, escaped))
    }

    /// A string, borrowed unless it has escapes.
    #[inline]
    fn str(&mut self) -> R<Cow<'a, str>> {
        self.ws();
        let (text, escaped) = self.string_body()?;
        if !escaped {
            return Ok(Cow::Borrowed(text));
        }
        unescape(text).map(Cow::Owned)
    }

    /// A string, inline when short ([`Str`]).
    fn string(&mut self) -> R<Str> {
        self.str().map(Str::from)
    }

    /// The next value's text, checked and skipped.
    fn raw(&mut self) -> R<&'a str> {
        self.ws();
        let start = self.i;
        self.skip()?;
        self.s.get(start..self.i).ok_or(Bail)
    }

    fn opt_string(&mut self) -> R<Option<Str>> {
        if self.null()? {
            return Ok(None);
        }
        self.string().map(Some)
    }

    fn opt_bool(&mut self) -> R<Option<bool>> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|()| None),
            b't' => self.literal(b"true").map(|()| Some(true)),
            b'f' => self.literal(b"false").map(|()| Some(false)),
            _ => Err(Bail),
        }
    }

    /// A plain integer of at most 18 digits (it fits an `i64`); any other number gives up.
    fn int(&mut self) -> R<i64> {
        self.ws();
        let start = self.i;
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        let digits = self.i;
        // Its value as the digits are passed (at most 18 of them are kept: no overflow).
        let mut value = 0i64;
        while let Some(&c @ b'0'..=b'9') = self.b.get(self.i) {
            value = value.wrapping_mul(10).wrapping_add(i64::from(c - b'0'));
            self.i += 1;
        }
        let n = self.i - digits;
        // "0" alone is a number; "01" is not, and "-0" is left to serde.
        if n == 0 || n > 18 || (self.b[digits] == b'0' && (n > 1 || digits > start)) {
            return Err(Bail);
        }
        if let Some(b'.' | b'e' | b'E') = self.b.get(self.i) {
            return Err(Bail);
        }
        Ok(if digits > start { -value } else { value })
    }

    /// `lenient_int` of the views: an integer, or a string of one; `null` or a string that is
    /// not one as `None`.
    fn lenient_int(&mut self) -> R<Option<i64>> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|()| None),
            b'"' => Ok(self.str()?.trim().parse().ok()),
            b'-' | b'0'..=b'9' => self.int().map(Some),
            _ => Err(Bail),
        }
    }

    /// `lenient_string` of the views: a string, or an integer as its digits; `null` as `None`.
    fn lenient_string(&mut self) -> R<Option<Str>> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|()| None),
            b'"' => self.string().map(Some),
            b'-' | b'0'..=b'9' => self.int().map(|i| Some(i.to_compact_string())),
            _ => Err(Bail),
        }
    }

    /// Skips one value, checking it as serde_json would: one loop over the bytes, with the
    /// open containers as bits (1: object, 0: array). A string or other scalar, most of the
    /// values skipped, is checked here (what [`skip_value_with`] does for one, without setting
    /// up its loop). Not inlined: it ends every object's reading of the members it does not
    /// read, and a copy at each of those places cost more in instruction-cache misses (counted
    /// by cachegrind) than the call it saves.
    fn skip(&mut self) -> R<()> {
        self.ws();
        match self.b.get(self.i) {
            Some(b'{' | b'[') => self.skip_deep().map(|_| ()),
            Some(b'"') => {
                self.i = string_end(self.b, self.i + 1)?.0 + 1;
                Ok(())
            }
            _ => {
                self.i = scalar_end(self.b, self.i)?;
                Ok(())
            }
        }
    }

    /// [`skip`](Json::skip), returning the deepest nesting inside the value (0 for a scalar).
    fn skip_deep(&mut self) -> R<u32> {
        self.seen.begin();
        let (end, deepest) =
            skip_value_with(self.b, self.i, MAX_DEPTH - self.depth, &mut self.seen)?;
        self.i = end;
        Ok(deepest)
    }

    /// Where the next value ends when its bytes are `text`, a value known to be checked JSON
    /// that fits where it starts when that is nested at most `fits` deep: then it is that same
    /// value (see [`Known`]).
    fn known_end(&self, text: &[u8], fits: u32) -> Option<usize> {
        let end = self.i + text.len();
        (!text.is_empty() && self.depth <= fits && self.b.get(self.i..end) == Some(text))
            .then_some(end)
    }

    /// Where the next value, a pod template, is in the text, checked and not parsed: compared
    /// with the [`Known`] template, read only when it differs (and then known).
    fn template(&mut self) -> R<Option<RawJson>> {
        if self.null()? {
            return Ok(None);
        }
        self.ws();
        let start = self.i;
        if let Some(end) = self.known_end(&self.known.text, self.known.fits) {
            self.i = end;
        } else {
            // Nested `depth` deep inside, it fits wherever that leaves room for.
            let depth = self.skip_deep()?;
            let text = self.b.get(start..self.i).ok_or(Bail)?;
            self.known.text.clear();
            self.known.text.extend_from_slice(text);
            self.known.fits = MAX_DEPTH - depth;
        }
        Ok(Some(RawJson::At(start..self.i)))
    }

    /// The next value: the [`Known`] one (`at`) when the next bytes are its text
    /// ([`known_end`](Self::known_end), as for a template), else read with `read` and known.
    fn known_value<T: Clone>(
        &mut self,
        at: fn(&mut Known) -> &mut Option<Item<T>>,
        read: impl FnOnce(&mut Self) -> R<T>,
    ) -> R<T> {
        self.ws();
        let start = self.i;
        let mut known = at(&mut self.known).take();
        if let Some(k) = &known {
            if let Some(end) = self.known_end(&k.text, k.fits) {
                self.i = end;
                let got = k.read.clone();
                *at(&mut self.known) = known;
                return Ok(got);
            }
        }
        // Read starting this deep, it reads the same starting at most as deep; when refused,
        // the last one read whole stays known.
        let fits = self.depth;
        let got = read(self).and_then(|got| Ok((got, self.b.get(start..self.i).ok_or(Bail)?)));
        if let Ok((got, text)) = &got {
            let mut buf = known.take().map(|k| k.text).unwrap_or_default();
            buf.clear();
            buf.extend_from_slice(text);
            known = Some(Item {
                text: buf,
                fits,
                read: got.clone(),
            });
        }
        *at(&mut self.known) = known;
        got.map(|(got, _)| got)
    }

    /// An array whose elements are read with `read`, each first compared with the element at
    /// the same place in `items` (the same bytes: the same reading, taken as it is); an element
    /// that is not the same replaces it, so that `items` then holds this array's elements (when
    /// the array is refused, those read before, and the last whole reading's after them: each
    /// still a checked element and its reading).
    fn items<T>(&mut self, items: &mut Items<T>, mut read: impl FnMut(&mut Self) -> R<T>) -> R<()> {
        let mut n = 0;
        self.array(|j| {
            j.ws();
            let start = j.i;
            if let Some(item) = items.get(n) {
                if let Some(end) = j.known_end(&item.text, item.fits) {
                    j.i = end;
                    n += 1;
                    return Ok(());
                }
            }
            let fits = j.depth;
            let got = read(j)?;
            let text = j.b.get(start..j.i).ok_or(Bail)?;
            match items.get_mut(n) {
                Some(item) => {
                    item.text.clear();
                    item.text.extend_from_slice(text);
                    item.fits = fits;
                    item.read = got;
                }
                None => items.push(Item {
                    text: text.to_vec(),
                    fits,
                    read: got,
                }),
            }
            n += 1;
            Ok(())
        })?;
        items.truncate(n);
        Ok(())
    }

    /// An array whose elements are read with `read` into `new` (cleared first), each first
    /// compared with the elements of `old` near its place ([`Elements`]): the same bytes, the
    /// same reading, taken again.
    fn elements<T: Clone>(
        &mut self,
        old: &Elements<T>,
        new: &mut Elements<T>,
        mut read: impl FnMut(&mut Self) -> R<T>,
    ) -> R<()> {
        new.clear();
        let mut place = 0usize;
        self.array(|j| {
            j.ws();
            let start = j.i;
            // At its place, after it, before it.
            let near = [Some(place), place.checked_add(1), place.checked_sub(1)];
            let hit = near.into_iter().flatten().find_map(|k| {
                let e = old.items.get(k)?;
                j.known_end(old.text(e), e.fits).map(|end| (k, end))
            });
            let (got, fits) = match hit {
                Some((k, end)) => {
                    j.i = end;
                    place = k + 1;
                    let e = &old.items[k];
                    (e.read.clone(), e.fits)
                }
                None => {
                    let fits = j.depth;
                    let got = read(j)?;
                    place += 1;
                    (got, fits)
                }
            };
            let text = j.b.get(start..j.i).ok_or(Bail)?;
            new.items.push(Element {
                at: new.text.len(),
                len: text.len(),
                fits,
                read: got,
            });
            new.text.extend_from_slice(text);
            Ok(())
        })
    }

    fn vec<T>(&mut self, mut element: impl FnMut(&mut Self) -> R<T>) -> R<Vec<T>> {
        let mut v = Vec::new();
        self.array(|j| {
            v.push(element(j)?);
            Ok(())
        })?;
        Ok(v)
    }

    fn opt<T>(&mut self, read: impl FnOnce(&mut Self) -> R<T>) -> R<Option<T>> {
        if self.null()? {
            return Ok(None);
        }
        read(self).map(Some)
    }
}

/// Reads an object into a struct's fields: each `"key" => place = read` reads that member's
/// value into `place`; a key seen twice gives up (serde refuses a duplicate field); other keys
/// are skipped. `null` or any other value where the object should be gives up too, as serde
/// refuses it for a struct.
macro_rules! fields {
    ($j:ident, { $($key:literal => $place:expr => $read:expr,)* }) => {{
        let mut seen = 0u32;
        $j.object(|$j, key| {
            let mut bit = 0;
            $(
                if key == $key {
                    once(&mut seen, bit)?;
                    $place = $read;
                    return Ok(());
                }
                bit += 1;
            )*
            let _ = bit;
            $j.skip()
        })
    }};
}

/// `metadata`, with `managed` reading `managedFields`.
fn meta<'a, M: Default>(j: &mut Json<'a>, managed: fn(&mut Json<'a>) -> R<M>) -> R<Meta<M>> {
    meta_with(j, managed, |j| known_kept(j, |k| &mut k.labels))
}

/// `metadata`, with `managed` reading `managedFields` and `labels` its labels.
fn meta_with<'a, M: Default, L: Default>(
    j: &mut Json<'a>,
    managed: fn(&mut Json<'a>) -> R<M>,
    labels: fn(&mut Json<'a>) -> R<L>,
) -> R<Meta<M, L>> {
    let mut m = Meta::<M, L>::default();
    fields!(j, {
        "name" => m.name => j.string()?,
        "uid" => m.uid => j.string()?,
        "generation" => m.generation => j.lenient_int()?,
        "labels" => m.labels => labels(j)?,
        "annotations" => m.annotations => known_kept(j, |k| &mut k.annotations)?,
        "ownerReferences" => m.owner_references => j.vec(owner_ref)?,
        "managedFields" => m.managed_fields => managed(j)?,
        "deletionTimestamp" => m.deletion_timestamp => j.opt_string()?,
        "creationTimestamp" => m.creation_timestamp => j.opt_string()?,
    })?;
    Ok(m)
}

fn skipped(j: &mut Json<'_>) -> R<Skipped> {
    j.skip().map(|()| Skipped)
}

/// Labels or annotations, keeping `K`'s keys (`null` reads as empty; a later duplicate
/// replaces an earlier one, as in serde's map).
fn kept<K: KeptKeys>(j: &mut Json<'_>) -> R<Kept<K>> {
    let mut kept = Kept::default();
    if j.null()? {
        return Ok(kept);
    }
    j.object(|j, key| {
        let Some(slot) = kept.slot(key) else {
            return j.skip();
        };
        if let Some(v) = j.opt_string()? {
            *slot = Some(v);
        }
        Ok(())
    })?;
    Ok(kept)
}

/// [`kept`], the [`Known`] ones (`at`, [`Json::known_value`]) where the object's `Known` is
/// kept from one version to the next.
fn known_kept<K: KeptKeys>(
    j: &mut Json<'_>,
    at: fn(&mut Known) -> &mut Option<Item<Kept<K>>>,
) -> R<Kept<K>> {
    if !j.known.keeps_metadata {
        return kept(j);
    }
    j.known_value(at, kept)
}

/// A Pod's labels: the kept ones, and where the map is (`null` reads as none).
fn pod_labels(j: &mut Json<'_>) -> R<PodLabels> {
    if j.null()? {
        return Ok(PodLabels::default());
    }
    j.ws();
    let start = j.i;
    let kept = kept(j)?;
    Ok(PodLabels {
        kept,
        raw: Some(RawJson::At(start..j.i)),
    })
}

fn owner_ref(j: &mut Json<'_>) -> R<OwnerRef> {
    let mut o = OwnerRef::default();
    fields!(j, {
        "kind" => o.kind => j.string()?,
        "name" => o.name => j.string()?,
        "uid" => o.uid => j.string()?,
        "controller" => o.controller => j.opt_bool()?,
    })?;
    Ok(o)
}

/// `managedFields`, reduced to the last writers as the view's `LastManagers` does. The entries
/// are [`Items`] of the object's [`Known`]: a write moves the time of one of them.
fn last_managers(j: &mut Json<'_>) -> R<LastManagers> {
    let mut last = LastManagers::default();
    if j.null()? {
        return Ok(last);
    }
    let mut items = std::mem::take(&mut j.known.managers);
    let read = j.items(&mut items, |j| {
        let (mut manager, mut subresource, mut time) = (Cow::Borrowed(""), None, None);
        fields!(j, {
            "manager" => manager => j.str()?,
            "subresource" => subresource => j.opt(Json::str)?,
            "time" => time => j.opt(Json::str)?,
        })?;
        Ok(time.as_deref().and_then(parse_rfc3339).map(|t| Manager {
            time: t.0,
            on_status: subresource.as_deref() == Some("status"),
            name: Str::from(manager),
        }))
    });
    j.known.managers = items;
    read?;
    let (mut main, mut status, mut status_user) = (None, None, None);
    for m in j.known.managers.iter().filter_map(|i| i.read.as_ref()) {
        let t = m.time;
        if m.on_status
            && !crate::input::view::rollouts_controller(&m.name)
            && status_user
                .as_ref()
                .is_none_or(|(best, _): &(i64, &Str)| t >= *best)
        {
            status_user = Some((t, &m.name));
        }
        let slot = if m.on_status { &mut status } else { &mut main };
        if slot.as_ref().is_none_or(|(best, _)| t >= *best) {
            *slot = Some((t, &m.name));
        }
    }
    // Only the last writers are copied.
    let own = |last: Option<(i64, &Str)>| last.map(|(t, m)| (t, m.clone()));
    last.main = own(main);
    last.status = own(status);
    last.status_user = own(status_user);
    Ok(last)
}

pub(crate) fn rollout(j: &mut Json<'_>) -> R<RolloutView> {
    let mut v = RolloutView::default();
    fields!(j, {
        "metadata" => v.metadata => meta(j, last_managers)?,
        "spec" => v.spec => rollout_spec(j)?,
        "status" => v.status => rollout_status(j)?,
    })?;
    Ok(v)
}

fn rollout_spec(j: &mut Json<'_>) -> R<RolloutSpec> {
    let mut s = RolloutSpec::default();
    fields!(j, {
        "replicas" => s.replicas => j.lenient_int()?,
        "paused" => s.paused => j.opt_bool()?,
        "template" => s.template => j.template()?,
        "strategy" => s.strategy => j.known_value(|k| &mut k.strategy, |j| strategy(j).map(Arc::new))?,
        "revisionHistoryLimit" => s.revision_history_limit => j.lenient_int()?,
        "workloadRef" => s.workload_ref => j.opt(workload_ref)?,
        "progressDeadlineSeconds" => s.progress_deadline_seconds => j.lenient_int()?,
        "progressDeadlineAbort" => s.progress_deadline_abort => j.opt_bool()?,
    })?;
    Ok(s)
}

fn workload_ref(j: &mut Json<'_>) -> R<WorkloadRef> {
    let mut w = WorkloadRef::default();
    fields!(j, {
        "kind" => w.kind => j.opt_string()?,
        "name" => w.name => j.opt_string()?,
        "scaleDown" => w.scale_down => j.opt_string()?,
    })?;
    Ok(w)
}

fn strategy(j: &mut Json<'_>) -> R<Strategy> {
    let mut s = Strategy::default();
    fields!(j, {
        "canary" => s.canary => j.opt(canary)?,
        "blueGreen" => s.blue_green => j.opt(blue_green)?,
    })?;
    Ok(s)
}

fn canary(j: &mut Json<'_>) -> R<Canary> {
    let mut c = Canary::default();
    fields!(j, {
        "steps" => c.steps => j.opt(|j| j.vec(step))?,
        "trafficRouting" => c.traffic_routing => j.opt(traffic_routing)?,
        "canaryService" => c.canary_service => j.opt_string()?,
        "stableService" => c.stable_service => j.opt_string()?,
        "canaryMetadata" => c.canary_metadata => j.opt(ephemeral)?,
        "stableMetadata" => c.stable_metadata => j.opt(ephemeral)?,
        "scaleDownDelaySeconds" => c.scale_down_delay_seconds => j.lenient_int()?,
        "abortScaleDownDelaySeconds" => c.abort_scale_down_delay_seconds => j.lenient_int()?,
        "dynamicStableScale" => c.dynamic_stable_scale => j.opt_bool()?,
    })?;
    Ok(c)
}

fn traffic_routing(j: &mut Json<'_>) -> R<TrafficRouting> {
    let mut t = TrafficRouting::default();
    fields!(j, {
        "nginx" => t.nginx => j.opt(|j| {
            let mut n = NginxRouting::default();
            fields!(j, {
                "stableIngress" => n.stable_ingress => j.opt_string()?,
                "stableIngresses" => n.stable_ingresses => j.opt(|j| j.vec(Json::string))?,
                "annotationPrefix" => n.annotation_prefix => j.opt_string()?,
            })?;
            Ok(n)
        })?,
        "istio" => t.istio => j.opt(istio)?,
        "plugins" => t.plugins => j.opt(|j| {
            let mut p = RouterPlugins::default();
            fields!(j, {
                "argoproj-labs/gatewayAPI" => p.gateway_api => j.opt(gateway_api)?,
            })?;
            Ok(p)
        })?,
    })?;
    Ok(t)
}

fn istio(j: &mut Json<'_>) -> R<IstioRouting> {
    fn virtual_service(j: &mut Json<'_>) -> R<IstioVirtualService> {
        let mut v = IstioVirtualService::default();
        fields!(j, {
            "name" => v.name => j.string()?,
            "routes" => v.routes => j.opt(|j| j.vec(Json::string))?,
        })?;
        Ok(v)
    }
    let mut i = IstioRouting::default();
    fields!(j, {
        "virtualService" => i.virtual_service => j.opt(virtual_service)?,
        "virtualServices" => i.virtual_services => j.opt(|j| j.vec(virtual_service))?,
        "destinationRule" => i.destination_rule => j.opt(|j| {
            let mut d = IstioDestinationRule::default();
            fields!(j, {
                "name" => d.name => j.string()?,
                "canarySubsetName" => d.canary_subset_name => j.opt_string()?,
                "stableSubsetName" => d.stable_subset_name => j.opt_string()?,
            })?;
            Ok(d)
        })?,
    })?;
    Ok(i)
}

fn gateway_api(j: &mut Json<'_>) -> R<GatewayApiRouting> {
    let mut g = GatewayApiRouting::default();
    fields!(j, {
        "httpRoute" => g.http_route => j.opt_string()?,
        "httpRoutes" => g.http_routes => j.opt(|j| j.vec(|j| {
            let mut r = GatewayApiRoute::default();
            fields!(j, {
                "name" => r.name => j.string()?,
            })?;
            Ok(r)
        }))?,
        "namespace" => g.namespace => j.opt_string()?,
    })?;
    Ok(g)
}

fn blue_green(j: &mut Json<'_>) -> R<BlueGreen> {
    let mut b = BlueGreen::default();
    fields!(j, {
        "activeService" => b.active_service => j.opt_string()?,
        "previewService" => b.preview_service => j.opt_string()?,
        "activeMetadata" => b.active_metadata => j.opt(ephemeral)?,
        "previewMetadata" => b.preview_metadata => j.opt(ephemeral)?,
        "scaleDownDelaySeconds" => b.scale_down_delay_seconds => j.lenient_int()?,
        "abortScaleDownDelaySeconds" => b.abort_scale_down_delay_seconds => j.lenient_int()?,
    })?;
    Ok(b)
}

fn ephemeral(j: &mut Json<'_>) -> R<EphemeralMetadata> {
    let mut m = EphemeralMetadata::default();
    fields!(j, {
        "labels" => m.labels => j.opt(strings)?,
    })?;
    Ok(m)
}

/// An object of strings (a selector, labels), every value a string.
fn strings(j: &mut Json<'_>) -> R<BTreeMap<String, String>> {
    let mut m = BTreeMap::new();
    j.object(|j, key| {
        m.insert(key.to_owned(), j.string()?.into());
        Ok(())
    })?;
    Ok(m)
}

/// A canary step, as the view's `Step` visitor reads an object (other shapes: left to serde).
/// That visitor takes repeated keys, the last one winning.
fn step(j: &mut Json<'_>) -> R<Step> {
    let (mut weight, mut pause, mut first_other) = (None, None, None);
    j.object(|j, key| {
        match key {
            "setWeight" => {
                weight = Some(match j.peek()? {
                    b'"' => j.str()?.trim().parse().unwrap_or(0),
                    b'n' => j.literal(b"null").map(|()| 0)?,
                    b't' => j.literal(b"true").map(|()| 0)?,
                    b'f' => j.literal(b"false").map(|()| 0)?,
                    _ => j.int()?,
                });
            }
            "pause" => {
                let mut duration = None;
                let body = j.opt(|j| {
                    fields!(j, {
                        "duration" => duration => j.lenient_string()?,
                    })
                })?;
                pause = Some(body.is_none() || duration.is_none());
            }
            _ => {
                j.skip()?;
                first_other.get_or_insert_with(|| key.to_owned());
            }
        }
        Ok(())
    })?;
    Ok(match (weight, pause) {
        (Some(w), _) => Step::SetWeight(w),
        (None, Some(indefinite)) => Step::Pause { indefinite },
        _ => Step::Other(first_other.unwrap_or_else(|| "empty".to_owned())),
    })
}

fn rollout_status(j: &mut Json<'_>) -> R<RolloutStatus> {
    let mut s = RolloutStatus::default();
    fields!(j, {
        "observedGeneration" => s.observed_generation => j.lenient_string()?,
        "currentPodHash" => s.current_pod_hash => j.opt_string()?,
        "currentStepHash" => s.current_step_hash => j.opt_string()?,
        "currentStepIndex" => s.current_step_index => j.lenient_int()?,
        "stableRS" => s.stable_rs => j.opt_string()?,
        "phase" => s.phase => j.opt_string()?,
        "message" => s.message => j.opt_string()?,
        "pauseConditions" => s.pause_conditions => j.opt(|j| j.vec(pause_condition))?,
        "controllerPause" => s.controller_pause => j.opt_bool()?,
        "abort" => s.abort => j.opt_bool()?,
        "promoteFull" => s.promote_full => j.opt_bool()?,
        "conditions" => s.conditions => j.opt(progressing)?,
        "canary" => s.canary => j.opt(canary_status)?,
        "replicas" => s.replicas => j.lenient_int()?,
        "updatedReplicas" => s.updated_replicas => j.lenient_int()?,
        "availableReplicas" => s.available_replicas => j.lenient_int()?,
        "blueGreen" => s.blue_green => j.opt(blue_green_status)?,
    })?;
    Ok(s)
}

fn pause_condition(j: &mut Json<'_>) -> R<PauseCondition> {
    let mut p = PauseCondition::default();
    fields!(j, {
        "reason" => p.reason => j.string()?,
        "startTime" => p.start_time => j.opt_string()?,
    })?;
    Ok(p)
}

fn blue_green_status(j: &mut Json<'_>) -> R<BlueGreenStatus> {
    let mut b = BlueGreenStatus::default();
    fields!(j, {
        "activeSelector" => b.active_selector => j.opt_string()?,
    })?;
    Ok(b)
}

/// `status.conditions` of a Rollout: the ones read (`condition_kept`). The conditions are
/// [`Items`] of the object's [`Known`]: a write moves one or two of them.
fn progressing(j: &mut Json<'_>) -> R<Vec<Condition>> {
    let mut items = std::mem::take(&mut j.known.conditions);
    let read = j.items(&mut items, |j| {
        let (mut type_, mut status) = (Cow::Borrowed(""), Cow::Borrowed(""));
        let (mut reason, mut message) = (None, None);
        fields!(j, {
            "type" => type_ => j.str()?,
            "status" => status => j.str()?,
            "reason" => reason => j.opt(Json::str)?,
            "message" => message => j.opt(Json::str)?,
        })?;
        Ok(condition_kept(&type_).then(|| Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.map(Str::from),
            message: message.map(Str::from),
        }))
    });
    j.known.conditions = items;
    read?;
    Ok(j.known
        .conditions
        .iter()
        .filter_map(|i| i.read.clone())
        .collect())
}

fn canary_status(j: &mut Json<'_>) -> R<CanaryStatus> {
    let mut c = CanaryStatus::default();
    fields!(j, {
        "stableRS" => c.stable_rs => j.opt_string()?,
        "weights" => c.weights => j.opt(weights)?,
    })?;
    Ok(c)
}

fn weights(j: &mut Json<'_>) -> R<Weights> {
    let mut w = Weights::default();
    fields!(j, {
        "canary" => w.canary => j.opt(|j| {
            let mut d = WeightDest::default();
            fields!(j, {
                "weight" => d.weight => j.lenient_int()?,
                "podTemplateHash" => d.pod_template_hash => j.opt_string()?,
            })?;
            Ok(d)
        })?,
    })?;
    Ok(w)
}

/// The string-valued labels of a pod template's text (`metadata.labels`; other values are not
/// labels a selector can match), or `None` where serde must decide: what
/// `Value::pointer("/metadata/labels")` of the parsed template keeps, without building the
/// template. A missing or `null` `metadata` or `labels` reads as no labels.
pub(crate) fn template_labels(text: &str) -> Option<BTreeMap<String, String>> {
    read(text, |j| {
        let mut labels = BTreeMap::new();
        fields!(j, {
            "metadata" => labels => {
                let mut labels = BTreeMap::new();
                if !j.null()? {
                    fields!(j, {
                        "labels" => labels => string_values(j)?,
                    })?;
                }
                labels
            },
        })?;
        Ok(labels)
    })
}

/// Whether `text` is one JSON value: checked by this reader, and by serde where this reader
/// gives up.
pub(crate) fn is_json(text: &str) -> bool {
    read(text, Json::skip).is_some() || serde_json::from_str::<IgnoredAny>(text).is_ok()
}

/// The members of the JSON object `text` as keys and the text of their values, in the order
/// written; `None` when it is not an object, or where serde must decide (an escaped key).
pub(crate) fn raw_members(text: &str) -> Option<Vec<(&str, &str)>> {
    read(text, |j| {
        let mut members = Vec::new();
        j.object(|j, key| {
            members.push((key, j.raw()?));
            Ok(())
        })?;
        Ok(members)
    })
}

/// Where each object and array of a text known to be one JSON value closes, found in one pass:
/// the members of an object within it, or the items of an array, are then read by passing over
/// each value with a lookup where [`raw_members`] and [`raw_items`] scan (and check) it. For
/// the comparison of two templates, which reads a level of each at a time: each level was
/// scanned again for every level it is read under.
#[derive(Debug)]
pub(crate) struct Structure<'t> {
    text: &'t str,
    /// At the offset of each `{` and `[`, the offset of its `}` or `]`.
    close: Vec<u32>,
}

impl<'t> Structure<'t> {
    /// The structure of `text`, which must be JSON (a template, checked when it was kept); `None`
    /// when its brackets or strings do not match up, or it is longer than offsets hold.
    pub fn of(text: &'t str) -> Option<Self> {
        let b = text.as_bytes();
        u32::try_from(b.len()).ok()?;
        let mut close = vec![0u32; b.len()];
        let mut open: Vec<usize> = Vec::with_capacity(16);
        let mut i = 0;
        while let Some(&c) = b.get(i) {
            match c {
                b'"' => {
                    i = string_end(b, i + 1).ok()?.0;
                }
                b'{' | b'[' => open.push(i),
                b'}' | b']' => {
                    let at = open.pop()?;
                    if b[at] + 2 != c {
                        return None;
                    }
                    close[at] = i as u32;
                }
                _ => {}
            }
            i += 1;
        }
        open.is_empty().then_some(Structure { text, close })
    }

    /// Where `part` (a slice of the text) starts in it, if it is one.
    fn offset(&self, part: &str) -> Option<usize> {
        let at = (part.as_ptr() as usize).checked_sub(self.text.as_ptr() as usize)?;
        (at + part.len() <= self.text.len()).then_some(at)
    }

    /// Where the value at `i` ends (exclusive).
    fn value_end(&self, i: usize) -> Option<usize> {
        let b = self.text.as_bytes();
        match *b.get(i)? {
            b'{' | b'[' => Some(*self.close.get(i)? as usize + 1).filter(|&e| e > i + 1),
            b'"' => Some(string_end(b, i + 1).ok()?.0 + 1),
            _ => scalar_end(b, i).ok(),
        }
    }

    /// Where the content of `part` starts (after whitespace) and where it closes, when `part`
    /// is a whole object or array of the text that opens with `open`.
    fn inside(&self, part: &str, open: u8) -> Option<(usize, usize)> {
        let b = self.text.as_bytes();
        let start = self.offset(part)?;
        if b.get(start) != Some(&open) {
            return None;
        }
        let end = *self.close.get(start)? as usize;
        (end + 1 == start + part.len()).then(|| (ws(b, start + 1), end))
    }

    /// [`raw_members`] of `part`, a slice of the text that is an object of it: the same
    /// members; `None` where it gives up (an escaped key) or `part` is not one of its objects.
    pub fn members(&self, part: &'t str) -> Option<Vec<(&'t str, &'t str)>> {
        let (b, s) = (self.text.as_bytes(), self.text);
        let (mut i, end) = self.inside(part, b'{')?;
        let mut members = Vec::new();
        if i == end {
            return Some(members);
        }
        loop {
            if b.get(i) != Some(&b'"') {
                return None;
            }
            let (key_end, escaped) = string_end(b, i + 1).ok()?;
            if escaped {
                return None;
            }
            let key = s.get(i + 1..key_end)?;
            i = ws(b, key_end + 1);
            if b.get(i) != Some(&b':') {
                return None;
            }
            i = ws(b, i + 1);
            let value_end = self.value_end(i)?;
            members.push((key, s.get(i..value_end)?));
            i = ws(b, value_end);
            match b.get(i) {
                Some(b',') => i = ws(b, i + 1),
                Some(b'}') if i == end => return Some(members),
                _ => return None,
            }
        }
    }

    /// [`raw_items`] of `part`, a slice of the text that is an array of it.
    pub fn items(&self, part: &'t str) -> Option<Vec<&'t str>> {
        let (b, s) = (self.text.as_bytes(), self.text);
        let (mut i, end) = self.inside(part, b'[')?;
        let mut items = Vec::new();
        if i == end {
            return Some(items);
        }
        loop {
            let value_end = self.value_end(i)?;
            items.push(s.get(i..value_end)?);
            i = ws(b, value_end);
            match b.get(i) {
                Some(b',') => i = ws(b, i + 1),
                Some(b']') if i == end => return Some(items),
                _ => return None,
            }
        }
    }
}

/// The text of each item of the JSON array `text`; `None` when it is not an array, or where
/// serde must decide.
pub(crate) fn raw_items(text: &str) -> Option<Vec<&str>> {
    read(text, |j| {
        let mut items = Vec::new();
        j.array(|j| {
            items.push(j.raw()?);
            Ok(())
        })?;
        Ok(items)
    })
}

/// The JSON string `text`, unescaped; `None` when it is not one.
pub(crate) fn raw_string(text: &str) -> Option<Cow<'_, str>> {
    read(text, Json::str)
}

/// A map's string values (`null` reads as empty; other values are skipped; a later duplicate
/// replaces an earlier one, as in serde's map).
fn string_values(j: &mut Json<'_>) -> R<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    if j.null()? {
        return Ok(out);
    }
    j.object(|j, key| {
        if j.peek()? != b'"' {
            out.remove(key);
            return j.skip();
        }
        out.insert(key.to_owned(), j.string()?.into());
        Ok(())
    })?;
    Ok(out)
}

pub(crate) fn replicaset(j: &mut Json<'_>) -> R<ReplicaSetView> {
    let mut v = ReplicaSetView::default();
    fields!(j, {
        "metadata" => v.metadata => meta(j, skipped)?,
        "spec" => v.spec => rs_spec(j)?,
        "status" => v.status => rs_status(j)?,
    })?;
    Ok(v)
}

pub(crate) fn deployment(j: &mut Json<'_>) -> R<DeploymentView> {
    let mut v = DeploymentView::default();
    fields!(j, {
        "metadata" => v.metadata => meta(j, last_managers)?,
        "spec" => v.spec => rs_spec(j)?,
        "status" => v.status => rs_status(j)?,
    })?;
    Ok(v)
}

fn rs_spec(j: &mut Json<'_>) -> R<RsSpec> {
    let mut s = RsSpec::default();
    fields!(j, {
        "replicas" => s.replicas => j.lenient_int()?,
        "revisionHistoryLimit" => s.revision_history_limit => j.lenient_int()?,
        "template" => s.template => j.template()?,
    })?;
    Ok(s)
}

fn rs_status(j: &mut Json<'_>) -> R<RsStatus> {
    let mut s = RsStatus::default();
    fields!(j, {
        "replicas" => s.replicas => j.lenient_int()?,
        "readyReplicas" => s.ready_replicas => j.lenient_int()?,
        "availableReplicas" => s.available_replicas => j.lenient_int()?,
    })?;
    Ok(s)
}

pub(crate) fn service(j: &mut Json<'_>) -> R<ServiceView> {
    let mut v = ServiceView::default();
    fields!(j, {
        "metadata" => v.metadata => meta(j, |j| j.vec(service_manager))?,
        "spec" => v.spec => service_spec(j)?,
    })?;
    Ok(v)
}

fn service_manager(j: &mut Json<'_>) -> R<ServiceManager> {
    let mut m = ServiceManager::default();
    fields!(j, {
        "manager" => m.manager => j.string()?,
        "fieldsV1" => m.fields => j.opt(|j| {
            let mut f = SpecFields::default();
            fields!(j, {
                "f:spec" => f.spec => j.opt(|j| {
                    let mut s = SelectorFields::default();
                    fields!(j, {
                        "f:selector" => s.selector => j.opt(skipped)?,
                    })?;
                    Ok(s)
                })?,
            })?;
            Ok(f)
        })?,
    })?;
    Ok(m)
}

fn service_spec(j: &mut Json<'_>) -> R<ServiceSpec> {
    let mut s = ServiceSpec::default();
    fields!(j, {
        "selector" => s.selector => j.opt(strings)?,
    })?;
    Ok(s)
}

pub(crate) fn slice(j: &mut Json<'_>) -> R<EndpointSliceView> {
    let mut v = EndpointSliceView::default();
    fields!(j, {
        "metadata" => v.metadata => meta(j, skipped)?,
        "endpoints" => v.endpoints => j.opt(known_endpoints)?,
    })?;
    Ok(v)
}

/// An EndpointSlice's endpoints, [`Elements`] of the object's [`Known`]: a pod that becomes
/// ready, comes or goes changes one of them, and a Service's slice holds up to a hundred.
fn known_endpoints(j: &mut Json<'_>) -> R<Vec<Arc<Endpoint>>> {
    let old = std::mem::take(&mut j.known.endpoints);
    let mut new = SPARE_ENDPOINTS.with_borrow_mut(std::mem::take);
    let read = j.elements(&old, &mut new, |j| endpoint(j).map(Arc::new));
    let endpoints = read.map(|()| new.items.iter().map(|e| e.read.clone()).collect());
    // What is known is this version's, when it was read whole; the last whole one's else.
    let (keep, mut spare) = if endpoints.is_ok() {
        (new, old)
    } else {
        (old, new)
    };
    j.known.endpoints = keep;
    spare.clear();
    SPARE_ENDPOINTS.with_borrow_mut(|s| *s = spare);
    endpoints
}

thread_local! {
    /// The buffers the next endpoints are read into, kept between reads.
    static SPARE_ENDPOINTS: std::cell::RefCell<Elements<Arc<Endpoint>>> =
        std::cell::RefCell::new(Elements::default());
}

/// The elements of an array an object had at its last read, like [`Items`], with their texts
/// one after another in one buffer (compared in order, as one stream of bytes, rather than a
/// hundred small allocations apart in memory), for an array whose elements come and go: each
/// element is compared with the one at its place, the one after it (one was removed before it)
/// and the one before it (one was added), and read only when none holds the same bytes.
#[derive(Debug)]
pub(crate) struct Elements<T> {
    text: Vec<u8>,
    items: Vec<Element<T>>,
}

impl<T> Default for Elements<T> {
    fn default() -> Self {
        Elements {
            text: Vec::new(),
            items: Vec::new(),
        }
    }
}

/// An element of [`Elements`]: where its text is, the deepest nesting it was read at (see
/// [`Item`]), and what was read of it.
#[derive(Debug)]
struct Element<T> {
    at: usize,
    len: usize,
    fits: u32,
    read: T,
}

impl<T> Elements<T> {
    fn bytes(&self) -> usize {
        self.text.len() + self.items.len() * std::mem::size_of::<Element<T>>()
    }

    fn clear(&mut self) {
        self.text.clear();
        self.items.clear();
    }

    fn text(&self, e: &Element<T>) -> &[u8] {
        self.text.get(e.at..e.at + e.len).unwrap_or_default()
    }
}

fn endpoint(j: &mut Json<'_>) -> R<Endpoint> {
    let mut e = Endpoint::default();
    fields!(j, {
        "addresses" => e.addresses => j.vec(Json::string)?,
        "conditions" => e.conditions => {
            let mut c = EndpointConditions::default();
            fields!(j, {
                "ready" => c.ready => j.opt_bool()?,
            })?;
            c
        },
        "targetRef" => e.target_ref => j.opt(|j| {
            let mut t = TargetRef::default();
            fields!(j, {
                "kind" => t.kind => j.string()?,
                "name" => t.name => j.string()?,
            })?;
            Ok(t)
        })?,
    })?;
    Ok(e)
}

pub(crate) fn pod(j: &mut Json<'_>) -> R<PodView> {
    let mut v = PodView::default();
    fields!(j, {
        "metadata" => v.metadata => meta_with(j, skipped, pod_labels)?,
        "spec" => v.spec => {
            let mut s = PodSpec::default();
            fields!(j, {
                "containers" => s.containers => j.vec(container)?,
                "initContainers" => s.init_containers => j.vec(container)?,
            })?;
            s
        },
        "status" => v.status => {
            let mut s = PodStatus::default();
            fields!(j, {
                "conditions" => s.conditions => ready(j)?,
                "containerStatuses" => s.container_statuses => j.vec(container_status)?,
            })?;
            s
        },
    })?;
    Ok(v)
}

fn container(j: &mut Json<'_>) -> R<Container> {
    let mut c = Container::default();
    fields!(j, {
        "name" => c.name => j.string()?,
        "image" => c.image => j.string()?,
    })?;
    Ok(c)
}

/// `status.conditions` of a Pod: the `Ready` ones.
fn ready(j: &mut Json<'_>) -> R<Vec<PodCondition>> {
    let mut kept = Vec::new();
    j.array(|j| {
        let (mut type_, mut status, mut since) = (Cow::Borrowed(""), Cow::Borrowed(""), None);
        let (mut reason, mut message) = (None, None);
        fields!(j, {
            "type" => type_ => j.str()?,
            "status" => status => j.str()?,
            "lastTransitionTime" => since => j.opt(Json::str)?,
            "reason" => reason => j.opt(Json::str)?,
            "message" => message => j.opt(Json::str)?,
        })?;
        if crate::input::view::kept_condition(&type_, &status) {
            let unscheduled = type_ != "Ready";
            kept.push(PodCondition {
                type_: type_.into(),
                status: status.into(),
                last_transition_time: since.map(Str::from),
                reason: reason.filter(|_| unscheduled).map(Str::from),
                message: message.filter(|_| unscheduled).map(Str::from),
            });
        }
        Ok(())
    })?;
    Ok(kept)
}

fn container_status(j: &mut Json<'_>) -> R<ContainerStatus> {
    let mut c = ContainerStatus::default();
    fields!(j, {
        "name" => c.name => j.string()?,
        "image" => c.image => j.string()?,
        "imageID" => c.image_id => j.string()?,
        "state" => c.state => container_state(j)?,
        "lastState" => c.last_state => container_state(j)?,
    })?;
    Ok(c)
}

fn container_state(j: &mut Json<'_>) -> R<crate::input::view::ContainerState> {
    fn detail(j: &mut Json<'_>) -> R<crate::input::view::StateDetail> {
        let mut d = crate::input::view::StateDetail::default();
        fields!(j, {
            "reason" => d.reason => j.opt_string()?,
            "message" => d.message => j.opt_string()?,
            "exitCode" => d.exit_code => j.lenient_int()?,
        })?;
        Ok(d)
    }
    let mut st = crate::input::view::ContainerState::default();
    fields!(j, {
        "waiting" => st.waiting => j.opt(detail)?,
        "terminated" => st.terminated => j.opt(detail)?,
    })?;
    Ok(st)
}

/// An Argo CD Application: Argo CD rewrites its status at every refresh, and it lists every
/// resource the app manages, so a recording with Argo CD holds many large ones.
pub(crate) fn application(j: &mut Json<'_>) -> R<ApplicationView> {
    let mut v = ApplicationView::default();
    fields!(j, {
        "metadata" => v.metadata => meta(j, skipped)?,
        "status" => v.status => app_status(j)?,
    })?;
    Ok(v)
}

fn app_status(j: &mut Json<'_>) -> R<AppStatus> {
    let mut s = AppStatus::default();
    fields!(j, {
        "sync" => s.sync => {
            let mut sync = AppSync::default();
            fields!(j, {
                "status" => sync.status => j.opt_string()?,
                "revision" => sync.revision => j.lenient_string()?,
            })?;
            sync
        },
        "health" => s.health => {
            let mut health = AppHealth::default();
            fields!(j, {
                "status" => health.status => j.opt_string()?,
            })?;
            health
        },
        "history" => s.history => j.known_value(|k| &mut k.app_history, |j| j.vec(app_history).map(Arc::new))?,
        "resources" => s.resources => j.known_value(|k| &mut k.app_resources, |j| j.vec(app_resource).map(Arc::new))?,
        "operationState" => s.operation_state => j.known_value(|k| &mut k.app_operation, |j| j.opt(|j| {
            let mut o = AppOperationState::default();
            fields!(j, {
                "operation" => o.operation => j.opt(|j| {
                    let mut op = AppOperation::default();
                    fields!(j, {
                        "sync" => op.sync => j.opt(|j| {
                            let mut sync = AppOperationSync::default();
                            fields!(j, {
                                "autoHealAttemptsCount" => sync.auto_heal_attempts_count => j.lenient_int()?,
                                "resources" => sync.resources => j.opt(|j| j.vec(app_resource))?,
                            })?;
                            Ok(sync)
                        })?,
                    })?;
                    Ok(op)
                })?,
                "phase" => o.phase => j.opt_string()?,
                "message" => o.message => j.opt_string()?,
                "syncResult" => o.sync_result => j.opt(|j| {
                    let mut r = AppSyncResult::default();
                    fields!(j, {
                        "resources" => r.resources => {
                            let mut failed = Vec::new();
                            j.opt(|j| {
                                j.array(|j| {
                                    let one = app_result_resource(j)?;
                                    if one.failed() {
                                        failed.push(one);
                                    }
                                    Ok(())
                                })
                            })?;
                            failed
                        },
                    })?;
                    Ok(r)
                })?,
            })?;
            Ok(o)
        }).map(|o| o.map(Arc::new)))?,
    })?;
    Ok(s)
}

fn app_history(j: &mut Json<'_>) -> R<AppHistory> {
    let mut h = AppHistory::default();
    fields!(j, {
        "revision" => h.revision => j.lenient_string()?,
        "revisions" => h.revisions => j.opt(|j| j.vec(Json::string))?,
        "deployedAt" => h.deployed_at => j.opt_string()?,
        "id" => h.id => j.lenient_int()?,
        "deployStartedAt" => h.deploy_started_at => j.opt_string()?,
        "initiatedBy" => h.initiated_by => j.opt(|j| {
            let mut i = AppInitiator::default();
            fields!(j, {
                "username" => i.username => j.opt_string()?,
                "automated" => i.automated => j.opt_bool()?,
            })?;
            Ok(i)
        })?,
        "source" => h.source => j.opt(app_source)?,
        "sources" => h.sources => j.opt(|j| j.vec(app_source))?,
    })?;
    Ok(h)
}

fn app_source(j: &mut Json<'_>) -> R<AppSource> {
    let mut s = AppSource::default();
    fields!(j, {
        "repoURL" => s.repo_url => j.opt_string()?,
        "targetRevision" => s.target_revision => j.opt_string()?,
        "helm" => s.helm => j.opt(|j| {
            let mut h = AppHelm::default();
            fields!(j, {
                "parameters" => h.parameters => j.opt(|j| j.vec(|j| {
                    let mut p = AppParameter::default();
                    fields!(j, {
                        "name" => p.name => j.opt_string()?,
                        "value" => p.value => j.lenient_string()?,
                    })?;
                    Ok(p)
                }))?,
            })?;
            Ok(h)
        })?,
    })?;
    Ok(s)
}

fn app_result_resource(j: &mut Json<'_>) -> R<AppResultResource> {
    let mut r = AppResultResource::default();
    fields!(j, {
        "kind" => r.kind => j.string()?,
        "name" => r.name => j.string()?,
        "status" => r.status => j.opt_string()?,
        "hookType" => r.hook_type => j.opt_string()?,
        "hookPhase" => r.hook_phase => j.opt_string()?,
        "message" => r.message => j.opt_string()?,
    })?;
    Ok(r)
}

fn app_resource(j: &mut Json<'_>) -> R<AppResource> {
    let mut r = AppResource::default();
    fields!(j, {
        "kind" => r.kind => j.string()?,
        "namespace" => r.namespace => j.string()?,
        "name" => r.name => j.string()?,
    })?;
    Ok(r)
}

// The contract of the fast reader, checked on one object (by the tests, and by the fuzz target
// through `check_against_serde`).

/// The fast reader's view, if it gave one, and serde's answer, both as `Debug` text.
fn both<T: DeserializeOwned + std::fmt::Debug>(
    text: &str,
    fast: for<'a> fn(&mut Json<'a>) -> R<T>,
) -> (Option<String>, Result<String, String>) {
    both_raw(text, &mut Known::default(), fast, |_, _| {})
}

/// [`both`] given the `known` template of the object, for a view that may hold
/// [`RawJson`]: `resolve` turns its ranges into their text.
fn both_raw<T: DeserializeOwned + std::fmt::Debug>(
    text: &str,
    known: &mut Known,
    fast: for<'a> fn(&mut Json<'a>) -> R<T>,
    resolve: fn(&mut T, &str),
) -> (Option<String>, Result<String, String>) {
    let skimmed = read_with(text, known, fast).map(|mut v| {
        resolve(&mut v, text);
        format!("{v:?}")
    });
    let serde = serde_json::from_str::<T>(text)
        .map(|v| format!("{v:?}"))
        .map_err(|e| e.to_string());
    (skimmed, serde)
}

/// Checks the contract on one object: a view from the fast reader is serde's view, and an
/// object serde refuses is never read. Returns whether the fast reader read it.
#[doc(hidden)]
pub fn check_against_serde(kind: &rf_format::Kind, text: &str) -> bool {
    agree_known(kind, text, &mut Known::default())
}

/// [`check_against_serde`], the object read with the `known` template of its earlier versions (which
/// it then holds for the next).
fn agree_known(kind: &Kind, text: &str, known: &mut Known) -> bool {
    let (skimmed, serde) = match kind {
        Kind::Rollout => both_raw(text, known, rollout, |v, t| {
            RawJson::resolve(&mut v.spec.template, t);
        }),
        Kind::ReplicaSet => both_raw(text, known, replicaset, |v, t| {
            RawJson::resolve(&mut v.spec.template, t);
        }),
        k if rf_format::api::DEPLOYMENT.is(k) => both_raw(text, known, deployment, |v, t| {
            RawJson::resolve(&mut v.spec.template, t);
        }),
        Kind::Service => both(text, service),
        Kind::EndpointSlice => both(text, slice),
        Kind::Pod => both_raw(text, known, pod, |v, t| {
            RawJson::resolve(&mut v.metadata.labels.raw, t);
        }),
        Kind::Application => both(text, application),
        _ => return false,
    };
    match (&skimmed, &serde) {
        (Some(fast), Ok(slow)) => assert_eq!(fast, slow, "{kind:?} {text}"),
        (Some(fast), Err(e)) => panic!("serde refuses ({e}) what was read as {fast}: {text}"),
        (None, _) => {}
    }
    skimmed.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rf_format::{Kind, Record};
    use serde::de::DeserializeOwned;
    use std::collections::BTreeSet;

    /// An integer is read as its value wherever it is plain and at most 18 digits long, as the
    /// standard parse reads it; any other number is left to serde.
    #[test]
    fn integers_read_as_their_value_and_others_left_to_serde() {
        let mut texts: Vec<String> = [
            "0",
            "7",
            "-7",
            "10",
            "-0",
            "01",
            "-01",
            "00",
            "1.5",
            "1e3",
            "1E3",
            "-",
            "",
            "12a",
            "999999999999999999",
            "-999999999999999999",
            "1000000000000000000",
            "9223372036854775807",
            "-9223372036854775808",
        ]
        .iter()
        .map(|t| t.to_string())
        .collect();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..3000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = (x >> (x % 64)) as i64 * if x % 3 == 0 { -1 } else { 1 };
            texts.push(v.to_string());
        }
        let mut read = 0;
        for text in &texts {
            let plain = text.trim_start_matches('-');
            let digits = plain.len();
            let expected = (digits > 0
                && digits <= 18
                && plain.bytes().all(|c| c.is_ascii_digit())
                && (plain == "0" && !text.starts_with('-') || !plain.starts_with('0')))
            .then(|| text.parse::<i64>().expect("a plain integer"));
            assert_eq!(super::read(text, Json::int), expected, "{text}");
            read += usize::from(expected.is_some());
        }
        assert!(read > 1500, "{read} read");
    }

    #[test]
    fn escaped_strings_read_as_serde_reads_them() {
        let cases = [
            r#""a\"b""#,
            r#""ReplicaSet \"web-5d98c7bf64\" has successfully progressed.""#,
            r#""\\\/\b\f\n\r\t""#,
            r#""\u0041\u00e9\u4e2d\u0000end""#,
            r#""x\ud83d\ude00y""#,
            r#""é\"ü""#,
            r#""\ud83d""#,
            r#""\ud83dx""#,
            r#""\ud83d\u0041""#,
            r#""\ude00""#,
            r#""\u12""#,
            r#""\q""#,
            r#""trailing\""#,
        ];
        for quoted in cases {
            let serde = serde_json::from_str::<String>(quoted).ok();
            let fast = read(quoted, |j| j.str().map(Cow::into_owned));
            // The fast reader gives up only where serde refuses too, or decides otherwise.
            match (&fast, &serde) {
                (Some(f), Some(s)) => assert_eq!(f, s, "{quoted}"),
                (Some(f), None) => panic!("{quoted}: read as {f:?}, which serde refuses"),
                (None, _) => {}
            }
        }
        // And it does read every escape serde takes, surrogate pairs included.
        for quoted in &cases[..6] {
            assert!(
                read(quoted, |j| j.str().map(Cow::into_owned)).is_some(),
                "{quoted}"
            );
        }
    }

    fn both_raw<T: DeserializeOwned + std::fmt::Debug>(
        text: &str,
        known: &mut Known,
        fast: for<'a> fn(&mut Json<'a>) -> R<T>,
        resolve: fn(&mut T, &str),
    ) -> (Option<String>, Result<String, String>) {
        super::both_raw(text, known, fast, resolve)
    }

    fn agree(kind: &Kind, text: &str) -> bool {
        check_against_serde(kind, text)
    }

    fn agree_known(kind: &Kind, text: &str, known: &mut Known) -> bool {
        super::agree_known(kind, text, known)
    }

    fn objects(records: &[Record]) -> Vec<(Kind, String)> {
        records
            .iter()
            .filter(|r| !r.object.is_empty())
            .filter_map(|r| Some((r.kind.clone(), String::from_utf8(r.object.clone()).ok()?)))
            .collect()
    }

    /// Every object of the scripted incidents, and of a small scale recording.
    fn corpus() -> Vec<(Kind, String)> {
        let mut all = Vec::new();
        for info in rf_scenarios::catalog() {
            let rec = rf_scenarios::generate(info.name).expect("a scenario of the catalog");
            all.extend(objects(&rec.records));
        }
        let scale = rf_scenarios::scale(&rf_scenarios::ScaleConfig {
            rollouts: 4,
            events: 3_000,
            seed: 7,
            applications: true,
            ..rf_scenarios::ScaleConfig::default()
        });
        all.extend(objects(&scale.records));
        all
    }

    #[test]
    fn views_equal_serde_on_every_generated_object() {
        let corpus = corpus();
        let mut read = 0;
        let mut total = 0;
        // Each object read fresh, and read after its earlier versions (their template known):
        // both are serde's view.
        let mut known: std::collections::HashMap<(Kind, String), Known> = Default::default();
        for (kind, text) in &corpus {
            // The routers, AnalysisRuns and Flux objects are read by serde alone.
            if crate::Prepared::reads(kind) && !crate::input::prepare::by_serde_alone(kind) {
                total += 1;
                read += usize::from(agree(kind, text));
                let name = serde_json::from_str::<serde_json::Value>(text)
                    .ok()
                    .and_then(|v| Some(v.pointer("/metadata/name")?.as_str()?.to_owned()))
                    .unwrap_or_default();
                let known = known
                    .entry((kind.clone(), name))
                    .or_insert_with(Known::kept);
                assert!(
                    agree_known(kind, text, known),
                    "{kind:?} read fresh, not after: {text}"
                );
            }
        }
        // The fast path is for the API server's shapes: it must take all of them, or it is
        // only a slower way to reach serde.
        assert!(total > 1_000, "{total} objects");
        let apps = corpus
            .iter()
            .filter(|(k, _)| *k == Kind::Application)
            .count();
        assert!(apps > 50, "{apps} Applications");
        assert_eq!(read, total, "objects the fast reader left to serde");
    }

    /// Every view, with every field serde reads given a value that is not its default (made up
    /// by [`crate::input::probe`], in a few passes that vary the words the analyzer looks for):
    /// the fast reader reads it, and reads what serde reads. A field added to a view and
    /// forgotten here would read as its default and fail this.
    #[test]
    fn every_field_of_every_view_is_read_as_serde_reads_it() {
        use crate::input::probe::made_up;
        fn check<T: DeserializeOwned>(kind: Kind, fields: &mut BTreeSet<(String, String)>) {
            for pass in 0..6 {
                let (json, named) = made_up::<T>(pass)
                    .unwrap_or_else(|e| panic!("{kind:?}: no made-up object ({e})"));
                let text = json.to_string();
                assert!(
                    agree(&kind, &text),
                    "{kind:?}, pass {pass}: left to serde: {text}"
                );
                fields.extend(named);
            }
        }
        let mut fields = BTreeSet::new();
        check::<RolloutView>(Kind::Rollout, &mut fields);
        check::<ReplicaSetView>(Kind::ReplicaSet, &mut fields);
        check::<ServiceView>(Kind::Service, &mut fields);
        check::<EndpointSliceView>(Kind::EndpointSlice, &mut fields);
        check::<PodView>(Kind::Pod, &mut fields);
        check::<ApplicationView>(Kind::Application, &mut fields);
        check::<DeploymentView>(rf_format::api::DEPLOYMENT.newest(), &mut fields);
        // The walk reached the fields deep in each view.
        for (strukt, field) in [
            ("RolloutStatus", "currentPodHash"),
            ("PauseCondition", "reason"),
            ("Canary", "steps"),
            ("RsStatus", "readyReplicas"),
            ("Endpoint", "targetRef"),
            ("OwnerRef", "uid"),
            ("WorkloadRef", "scaleDown"),
            ("NginxRouting", "stableIngresses"),
            ("IstioDestinationRule", "canarySubsetName"),
            ("IstioVirtualService", "routes"),
            ("GatewayApiRoute", "name"),
            ("WeightDest", "podTemplateHash"),
        ] {
            assert!(
                fields.contains(&(strukt.to_owned(), field.to_owned())),
                "{strukt}.{field} not walked: {fields:?}"
            );
        }
        assert!(fields.len() > 60, "{} fields walked", fields.len());
    }

    /// Arbitrary JSON text (objects of the views' member names and others, any values, repeated
    /// keys, odd spacing and escapes) as each kind: wherever the fast reader reads a view, it
    /// is serde's. The fuzz target (`fuzz/`) runs the same check on inputs libFuzzer finds.
    #[test]
    fn arbitrary_json_is_read_as_serde_reads_it_or_left_to_it() {
        use crate::input::probe::made_up;
        let mut names: Vec<String> = Vec::new();
        for pass in 0..3 {
            for fields in [
                made_up::<RolloutView>(pass).map(|m| m.1),
                made_up::<ReplicaSetView>(pass).map(|m| m.1),
                made_up::<ServiceView>(pass).map(|m| m.1),
                made_up::<EndpointSliceView>(pass).map(|m| m.1),
                made_up::<PodView>(pass).map(|m| m.1),
                made_up::<ApplicationView>(pass).map(|m| m.1),
                made_up::<DeploymentView>(pass).map(|m| m.1),
            ] {
                names.extend(fields.expect("made up").into_iter().map(|(_, f)| f));
            }
        }
        names.extend(["metadata", "spec", "status", "template", "labels", "k"].map(String::from));
        names.sort();
        names.dedup();
        let words = [
            "",
            "x",
            "7",
            "-3",
            "1e2",
            "Progressing",
            "Ready",
            "True",
            "CanaryPauseStep",
            "status",
            "2026-01-02T03:04:05Z",
            "2026-01-02T03:04:05.123456789+02:00",
            r#"a\"b"#,
            r"\u00e9\ud83d\ude00",
            r"\n\t",
            "é",
            "rollouts-pod-template-hash",
            r"\ud83d",
        ];
        let mut rng = rf_scenarios::SplitMix::new(11);
        fn value(
            rng: &mut rf_scenarios::SplitMix,
            depth: usize,
            names: &[String],
            words: &[&str],
            out: &mut String,
        ) {
            let space = ["", " ", "\n  "][rng.below(3)];
            out.push_str(space);
            match if depth > 5 {
                3 + rng.below(4)
            } else {
                rng.below(8)
            } {
                0..=2 => {
                    out.push('{');
                    for i in 0..rng.below(6) {
                        if i > 0 {
                            out.push(',');
                        }
                        let key = if rng.below(5) > 0 {
                            names[rng.below(names.len())].as_str()
                        } else {
                            words[rng.below(words.len())]
                        };
                        out.push_str(&format!("{space}\"{key}\"{space}:"));
                        value(rng, depth + 1, names, words, out);
                    }
                    out.push('}');
                }
                3 => {
                    out.push('[');
                    for i in 0..rng.below(4) {
                        if i > 0 {
                            out.push(',');
                        }
                        value(rng, depth + 1, names, words, out);
                    }
                    out.push(']');
                }
                4 => out.push_str(&format!("\"{}\"", words[rng.below(words.len())])),
                5 => out.push_str(
                    [
                        "0",
                        "1",
                        "-1",
                        "42",
                        "1.5",
                        "1e3",
                        "9223372036854775807",
                        "18446744073709551616",
                        "-0",
                    ][rng.below(9)],
                ),
                6 => out.push_str(["true", "false"][rng.below(2)]),
                _ => out.push_str("null"),
            }
        }
        let kinds: Vec<Kind> = Kind::KNOWN
            .into_iter()
            .chain([rf_format::api::DEPLOYMENT.newest()])
            .filter(crate::Prepared::reads)
            .collect();
        let mut read = 0;
        for i in 0..100_000 {
            let mut text = String::new();
            // An object at the top, as every record's is.
            text.push('{');
            for j in 0..1 + rng.below(4) {
                if j > 0 {
                    text.push(',');
                }
                let key = [
                    "metadata",
                    "spec",
                    "status",
                    names[rng.below(names.len())].as_str(),
                ][rng.below(4)];
                text.push_str(&format!("\"{key}\":"));
                value(&mut rng, 1, &names, &words, &mut text);
            }
            text.push('}');
            read += usize::from(check_against_serde(&kinds[i % kinds.len()], &text));
        }
        // A third are shapes the fast reader takes (the others it leaves to serde, as it must
        // where a type is not the one it reads): the check compared views, not only refusals.
        assert!(read > 25_000, "{read} of 100000 read by the fast reader");
    }

    /// The walk above fails where a field is forgotten: a view read with one of the members
    /// it names removed reads otherwise.
    #[test]
    fn a_field_the_reader_does_not_read_is_told_apart() {
        let (mut json, _) = crate::input::probe::made_up::<RolloutView>(0).expect("made up");
        let full = both_raw(&json.to_string(), &mut Known::default(), rollout, |v, t| {
            RawJson::resolve(&mut v.spec.template, t);
        });
        json["status"]
            .as_object_mut()
            .expect("a status")
            .remove("currentPodHash");
        let less = both_raw(&json.to_string(), &mut Known::default(), rollout, |v, t| {
            RawJson::resolve(&mut v.spec.template, t);
        });
        assert!(full.0.is_some() && less.0.is_some());
        assert_ne!(full.0, less.0, "the made-up value is not the default");
    }

    #[test]
    fn mutated_objects_are_read_as_serde_reads_them_or_left_to_it() {
        let corpus = corpus();
        let mut noise = rf_scenarios::SplitMix::new(7);
        // Bytes that change JSON's structure, and ones that change values.
        let inserts: &[&str] = &[
            "\"",
            "\\",
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "0",
            "-",
            ".",
            "e",
            "n",
            "t",
            " ",
            "\u{1}",
            "\\u00",
            "\\\"",
            "null",
            "true",
            "1e5",
            "-0",
            "01",
            "\"name\":\"x\",",
            "\"metadata\":{},",
            "\"labels\":null,",
            "\"k:{\\\"a\\\"}\":1,",
        ];
        let mut refused = 0;
        for _ in 0..20_000 {
            let (kind, text) = &corpus[noise.below(corpus.len())];
            let mut bytes = text.clone().into_bytes();
            for _ in 0..=noise.below(3) {
                let at = noise.below(bytes.len() + 1);
                match noise.below(3) {
                    0 if at < bytes.len() => {
                        bytes.remove(at);
                    }
                    1 => {
                        let s = inserts[noise.below(inserts.len())];
                        bytes.splice(at..at, s.bytes());
                    }
                    _ => {
                        // Duplicate a stretch: repeated keys, doubled values.
                        let len = noise.below(40).min(bytes.len() - at.min(bytes.len()));
                        let piece = bytes[at..at + len].to_vec();
                        bytes.splice(at..at, piece);
                    }
                }
            }
            let Ok(mutated) = String::from_utf8(bytes) else {
                continue;
            };
            agree(kind, &mutated);
            // Knowing the original's template, labels and annotations: ones the mutation
            // changed or moved are not taken for the known ones.
            let mut known = Known::kept();
            agree_known(kind, text, &mut known);
            agree_known(kind, &mutated, &mut known);
            let text = mutated;
            refused += usize::from(serde_json::from_str::<serde::de::IgnoredAny>(&text).is_err());
        }
        // Most mutations break the JSON: the check above ran on both kinds of input.
        assert!(refused > 5_000, "{refused} invalid objects");
    }

    #[test]
    fn a_known_template_is_taken_only_where_its_bytes_are_the_whole_value() {
        let rs = |template: &str| format!(r#"{{"spec":{{"template":{template}}}}}"#);
        let template = |text: &str, known: &mut Known| {
            read_with(text, known, replicaset).map(|v| {
                let raw = v.spec.template.expect("a template");
                raw.get(text.as_bytes()).expect("in the text").to_owned()
            })
        };
        let mut known = Known::default();
        let t = r#"{"metadata":{"labels":{"a":"1"}},"spec":{}}"#;
        assert_eq!(template(&rs(t), &mut known).as_deref(), Some(t));
        // The same bytes, known: the same value.
        assert_eq!(template(&rs(t), &mut known).as_deref(), Some(t));
        // Other bytes: read, and known from then on.
        let u = r#"{"metadata":{"labels":{"a":"2"}},"spec":{}}"#;
        assert_eq!(template(&rs(u), &mut known).as_deref(), Some(u));
        assert_eq!(known.text, u.as_bytes());
        // Cut short: the known bytes are there, the object around them is not: refused.
        assert_eq!(template(&rs(&u[..u.len() - 1]), &mut known), None);
        // A known number that starts a longer one is taken, and the digit left where a comma
        // should be gives up: serde decides (55), never the known 5.
        let mut known = Known::default();
        assert_eq!(template(&rs("5"), &mut known).as_deref(), Some("5"));
        assert_eq!(template(&rs("55"), &mut known), None);
        assert_eq!(
            template(&rs("55"), &mut Known::default()).as_deref(),
            Some("55")
        );
    }

    #[test]
    fn a_known_strategy_is_taken_only_where_its_bytes_are_the_whole_value() {
        let rollout = |strategy: &str| format!(r#"{{"spec":{{"strategy":{strategy}}}}}"#);
        let mut known = Known::default();
        let a = r#"{"canary":{"steps":[{"setWeight":20},{"pause":{}}]}}"#;
        let b = r#"{"canary":{"steps":[{"setWeight":50},{"pause":{}}]}}"#;
        for text in [a, a, b, b, a] {
            // Read after the versions before it, and fresh: serde's view either way.
            assert!(
                agree_known(&Kind::Rollout, &rollout(text), &mut known),
                "{text}"
            );
            assert!(agree(&Kind::Rollout, &rollout(text)), "{text}");
            assert_eq!(
                known.strategy.as_ref().map(|k| k.text.as_slice()),
                Some(text.as_bytes())
            );
        }
        // The known bytes and more where the object should end: refused, as serde refuses it.
        let longer = format!(r#"{{"spec":{{"strategy":{a}}}}}}}"#);
        assert!(!agree_known(&Kind::Rollout, &longer, &mut known));
        // Cut short inside a known strategy: refused.
        assert!(!agree_known(
            &Kind::Rollout,
            &rollout(&a[..a.len() - 1]),
            &mut known
        ));
    }

    #[test]
    fn known_array_elements_are_taken_only_where_their_bytes_are_the_whole_element() {
        let entry = |manager: &str, sub: &str, time: &str| {
            format!(
                r#"{{"manager":"{manager}","operation":"Update",{sub}"time":"{time}","fieldsType":"FieldsV1","fieldsV1":{{"f:status":{{".":{{}},"f:phase":{{}}}}}}}}"#
            )
        };
        let condition = |type_: &str, status: &str, message: &str| {
            format!(
                r#"{{"type":"{type_}","status":"{status}","reason":"R","message":"{message}"}}"#
            )
        };
        let rollout = |entries: &[&String], conditions: &[&String]| {
            let join =
                |all: &[&String]| all.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(",");
            format!(
                r#"{{"metadata":{{"name":"r","managedFields":[{}]}},"status":{{"conditions":[{}]}}}}"#,
                join(entries),
                join(conditions)
            )
        };
        let status = r#""subresource":"status","#;
        let argo = entry("argo-rollouts", status, "2026-01-01T00:00:01Z");
        let argo_later = entry("argo-rollouts", status, "2026-01-01T00:00:09Z");
        let kubectl = entry("kubectl-edit", status, "2026-01-01T00:00:05Z");
        let apply = entry("argocd-controller", "", "2026-01-01T00:00:00Z");
        let progressing = condition("Progressing", "True", "ReplicaSet is progressing");
        let progressed = condition(
            "Progressing",
            "True",
            "ReplicaSet has successfully progressed",
        );
        let available = condition("Available", "True", "Rollout has minimum availability");
        let versions = [
            rollout(&[&apply, &argo], &[&progressing]),
            // The same: every element taken.
            rollout(&[&apply, &argo], &[&progressing]),
            // One entry's time moved, one condition's message.
            rollout(&[&apply, &argo_later], &[&progressed]),
            // An entry and a condition added in front: nothing lines up.
            rollout(&[&kubectl, &apply, &argo_later], &[&available, &progressed]),
            // Taken away again, and the order changed.
            rollout(&[&argo_later, &apply], &[&progressed, &available]),
            rollout(&[], &[]),
            rollout(&[&apply, &argo], &[&progressing]),
        ];
        let mut known = Known::default();
        for text in &versions {
            // Read after the versions before it, and fresh: serde's view either way.
            assert!(agree_known(&Kind::Rollout, text, &mut known), "{text}");
            assert!(agree(&Kind::Rollout, text), "{text}");
        }
        // What is known is the last version's elements, whole.
        fn texts<T>(items: &[Item<T>]) -> Vec<Vec<u8>> {
            items.iter().map(|i| i.text.clone()).collect()
        }
        assert_eq!(texts(&known.managers), [apply.as_bytes(), argo.as_bytes()]);
        assert_eq!(texts(&known.conditions), [progressing.as_bytes()]);
        // A known element with more after it where the array should end, or cut short: refused
        // as serde refuses it, whatever is known.
        let longer =
            rollout(&[&apply, &argo], &[&progressing]).replacen(&argo, &format!("{argo}}}"), 1);
        assert!(!agree_known(&Kind::Rollout, &longer, &mut known));
        let cut = argo[..argo.len() - 1].to_owned();
        let short = rollout(&[&apply, &cut], &[&progressing]);
        assert!(!agree_known(&Kind::Rollout, &short, &mut known));
    }

    #[test]
    fn endpoints_are_taken_again_where_their_bytes_are_the_same_near_their_place() {
        let ep = |pod: &str, ready: bool| {
            format!(
                r#"{{"addresses":["10.0.0.{}"],"conditions":{{"ready":{ready}}},"targetRef":{{"kind":"Pod","name":"{pod}"}}}}"#,
                pod.len()
            )
        };
        let slice_of = |eps: &[&String]| {
            let eps: Vec<&str> = eps.iter().map(|s| s.as_str()).collect();
            format!(
                r#"{{"metadata":{{"name":"s","labels":{{"kubernetes.io/service-name":"web"}}}},"endpoints":[{}]}}"#,
                eps.join(",")
            )
        };
        let (a, b, c, d) = (
            ep("web-a", true),
            ep("web-bb", true),
            ep("web-ccc", true),
            ep("web-dddd", true),
        );
        let b_unready = ep("web-bb", false);
        let versions = [
            slice_of(&[&a, &b, &c]),
            // Changed at its place.
            slice_of(&[&a, &b_unready, &c]),
            // One added in front.
            slice_of(&[&d, &a, &b_unready, &c]),
            // One taken away.
            slice_of(&[&d, &b_unready, &c]),
            slice_of(&[]),
            slice_of(&[&a]),
        ];
        // Read after the versions before it, and fresh: serde's view either way.
        let mut known = Known::default();
        for text in &versions {
            assert!(
                agree_known(&Kind::EndpointSlice, text, &mut known),
                "{text}"
            );
            assert!(agree(&Kind::EndpointSlice, text), "{text}");
        }
        // The same endpoints, taken again rather than read: shared with the version before.
        let mut known = Known::default();
        let mut read = |text: &str| {
            read_with(text, &mut known, slice)
                .and_then(|v| v.endpoints)
                .expect("a slice with endpoints")
        };
        let same = |x: &Arc<Endpoint>, y: &Arc<Endpoint>| Arc::ptr_eq(x, y);
        let v0 = read(&versions[0]);
        let v1 = read(&versions[1]);
        assert!(same(&v0[0], &v1[0]) && !same(&v0[1], &v1[1]) && same(&v0[2], &v1[2]));
        let v2 = read(&versions[2]);
        assert!(same(&v1[0], &v2[1]) && same(&v1[1], &v2[2]) && same(&v1[2], &v2[3]));
        let v3 = read(&versions[3]);
        assert!(same(&v2[0], &v3[0]) && same(&v2[2], &v3[1]) && same(&v2[3], &v3[2]));
        assert_eq!(v3[1].conditions.ready, Some(false));
        // A known endpoint with more after it where the array should end, or cut short:
        // refused as serde refuses it, whatever is known.
        let longer = versions[3].replacen(&c, &format!("{c}}}"), 1);
        assert!(!agree_known(&Kind::EndpointSlice, &longer, &mut known));
        let short = slice_of(&[&d, &b_unready, &c[..c.len() - 1].to_owned()]);
        assert!(!agree_known(&Kind::EndpointSlice, &short, &mut known));
    }

    #[test]
    fn gives_up_where_serde_decides() {
        let pod = |meta: &str| format!(r#"{{"metadata":{meta},"spec":{{}},"status":{{}}}}"#);
        for meta in [
            r#"{"name":"a","name":"b"}"#, // duplicate field: serde refuses
            r#"{"na\u006de":"a"}"#,       // escaped key: serde matches "name"
            r#"{"generation":1.5}"#,      // not a plain integer
            r#"{"generation":-0}"#,
            r#"{"labels":{"rollouts-pod-template-hash":1}}"#, // a kept label, not a string
            "null",
        ] {
            assert!(read(&pod(meta), self::pod).is_none(), "{meta}");
        }
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(read(&pod(&format!(r#"{{"x":{deep}}}"#)), self::pod).is_none());
    }

    #[test]
    fn reads_what_serde_reads_in_the_shapes_it_handles() {
        let cases = [
            // Escaped keys and strings in what is skipped, and in what is read.
            r#"{"metadata":{"managedFields":[{"fieldsV1":{"k:{\"type\":\"Ready\"}":{}}}],"name":"a\"b\u00e9"}}"#,
            // Kept and skipped labels, null where serde takes it.
            r#"{"metadata":{"labels":{"rollouts-pod-template-hash":"h","x":{"y":[1,2.5e-3,true,null]}},"annotations":null,"deletionTimestamp":null}}"#,
            // A Pod's labels, kept and whole, with spacing kept in the text.
            r#"{"metadata":{"labels": { "rollouts-pod-template-hash":"h" , "role":"canary","n":{}}}}"#,
            // Whitespace everywhere JSON allows it.
            " {\n\t\"metadata\" : { \"name\" : \"a\" , \"generation\" : \"7\" } ,\r\n\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"Other\"}]} } ",
            "{}",
        ];
        for text in cases {
            // Read by both, and equal (the labels' text resolved).
            assert!(
                agree_known(&Kind::Pod, text, &mut Known::default()),
                "{text}"
            );
        }
        // Trailing text after the object: serde refuses, and so does this reader.
        assert!(read(r#"{"metadata":{}} x"#, pod).is_none());
        assert!(read(r#"{"metadata":{},}"#, pod).is_none());
    }

    /// What the analyzer took from a parsed template before `template_labels`.
    fn labels_by_serde(text: &str) -> Option<BTreeMap<String, String>> {
        let v = serde_json::from_str::<serde_json::Value>(text).ok()?;
        Some(crate::model::diff::string_values(&v, "/metadata/labels"))
    }

    #[test]
    fn template_labels_are_the_labels_of_the_parsed_template() {
        let mut templates: Vec<String> = corpus()
            .iter()
            .filter(|(kind, _)| matches!(kind, Kind::ReplicaSet | Kind::Rollout))
            .filter_map(|(_, text)| {
                let v = serde_json::from_str::<serde_json::Value>(text).ok()?;
                Some(v.pointer("/spec/template")?.to_string())
            })
            .collect();
        let generated = templates.len();
        assert!(generated > 500, "{generated} templates");
        templates.extend(
            [
                r#"{"metadata":{"labels":{"a":"1","b":2,"c":null,"d":{"e":"f"}}}}"#,
                r#"{"metadata":{"labels":{"a":"1","a":2}}}"#, // the later one wins: not a string
                r#"{"metadata":{"labels":{"a":2,"a":"1"}}}"#,
                r#"{"metadata":{"labels":{"a\u0062":"1","x":"\"y\""}}}"#,
                r#"{"metadata":null}"#,
                r#"{"metadata":{"labels":null}}"#,
                r#"{"metadata":"x"}"#,
                r#"{"metadata":{},"metadata":{"labels":{"a":"1"}}}"#,
                r#"{"spec":{"containers":[]}}"#,
                "{}",
            ]
            .map(str::to_owned),
        );
        let mut read = 0;
        for text in &templates {
            let fast = template_labels(text);
            if let Some(fast) = &fast {
                assert_eq!(Some(fast), labels_by_serde(text).as_ref(), "{text}");
                read += 1;
            }
        }
        // Every generated template takes the fast path.
        assert!(read >= generated, "{read} of {generated}");
        // Where it gives up, the caller's serde path answers: still the same labels.
        assert!(template_labels(r#"{"metadata":{"labels":{"a\u0062":"1"}}}"#).is_none());
    }

    /// Counts what [`Seen`] recalls.
    struct Counting<'s> {
        seen: &'s mut Seen,
        recalled: usize,
    }

    impl Recall for Counting<'_> {
        fn recall(&mut self, b: &[u8], i: usize) -> Option<(usize, u32)> {
            let got = self.seen.recall(b, i);
            self.recalled += usize::from(got.is_some());
            got
        }
        fn open(&mut self, i: usize) {
            self.seen.open(i);
        }
        fn close(&mut self, b: &[u8], end: usize) {
            self.seen.close(b, end);
        }
    }

    #[test]
    fn values_passed_over_before_end_where_checking_them_again_would_say() {
        // Values built from a few parts, so that the same objects and arrays come again at
        // other places and depths; some cut or changed a byte, so that some are not JSON.
        let parts = [
            r#"{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:rollouts-pod-template-hash":{}}}}"#,
            r#"{"f:status":{"f:conditions":{".":{},"k:{\"type\":\"Ready\"}":{".":{},"f:status":{}}}}}"#,
            r#"[{"name":"http","port":8080,"protocol":"TCP"},{"name":"grpc","port":9090,"protocol":"TCP"}]"#,
            r#"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["deep","deep","deep","deep"]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"#,
            r#""a string that is long enough to be more than thirty-two bytes""#,
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let mut seen = Seen::default();
        let mut recalled = 0;
        for round in 0..3000 {
            let mut text = String::new();
            let members = 1 + next(4);
            text.push('{');
            for m in 0..members {
                if m > 0 {
                    text.push(',');
                }
                let part = parts[next(parts.len())];
                // Nested a few levels deep, or not.
                let wrap = next(3);
                text.push_str(&format!(r#""k{m}":"#));
                text.push_str(&"[".repeat(wrap));
                text.push_str(part);
                text.push_str(&"]".repeat(wrap));
            }
            text.push('}');
            let mut b = text.into_bytes();
            match next(8) {
                0 => {
                    let at = next(b.len());
                    b[at] = b"{}[]\",:x "[next(9)];
                }
                1 => b.truncate(next(b.len())),
                _ => {}
            }
            let room = if round % 5 == 0 {
                30 + next(20) as u32
            } else {
                128
            };
            let mut counting = Counting {
                seen: &mut seen,
                recalled: 0,
            };
            counting.seen.begin();
            let with = skip_value_with(&b, 0, room, &mut counting);
            recalled += counting.recalled;
            let plain = rf_format::json::skip_value(&b, 0, room);
            assert_eq!(with, plain, "{}", String::from_utf8_lossy(&b));
        }
        // Most parts are recalled, not checked again.
        assert!(recalled > 3000, "recalled {recalled}");
    }

    #[test]
    fn a_value_is_recalled_only_where_its_bytes_are_all_there() {
        let value =
            br#"{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{}}}}}"#;
        let mut seen = Seen::default();
        seen.begin();
        assert_eq!(
            skip_value_with(value, 0, 128, &mut seen),
            Ok((value.len(), 5))
        );
        // The same bytes at another place: recalled.
        let mut at = b"[1,".to_vec();
        at.extend_from_slice(value);
        at.push(b']');
        assert_eq!(seen.recall(&at, 3), Some((3 + value.len(), 5)));
        // Cut short, or one byte other: not.
        assert_eq!(seen.recall(&value[..value.len() - 1], 0), None);
        let mut other = value.to_vec();
        other[value.len() - 5] = b'x';
        assert_eq!(seen.recall(&other, 0), None);
        // Too deep where it is now: refused, as checking it would.
        seen.begin();
        assert_eq!(skip_value_with(&at, 0, 5, &mut seen), Err(Bail));
        seen.begin();
        assert_eq!(skip_value_with(&at, 0, 6, &mut seen), Ok((at.len(), 6)));
    }

    #[test]
    fn labels_and_annotations_are_taken_again_where_their_bytes_are_the_same() {
        let rollout_with = |labels: &str| {
            format!(
                r#"{{"metadata":{{"name":"web","labels":{labels},"annotations":{{"rollout.argoproj.io/revision":"3"}}}},"spec":{{}},"status":{{}}}}"#
            )
        };
        let labels = r#"{"app.kubernetes.io/instance":"shop-web","team":"a"}"#;
        let mut known = Known::kept();
        let first = read_with(&rollout_with(labels), &mut known, rollout).expect("read");
        assert_eq!(
            first
                .metadata
                .labels
                .get("app.kubernetes.io/instance")
                .map(|s| s.as_str()),
            Some("shop-web")
        );
        // What is known is what the next version with the same bytes reads: mark it, and the
        // mark comes back.
        let kept = &mut known.labels.as_mut().expect("labels known").read;
        *kept.slot("app.kubernetes.io/instance").expect("a kept key") = Some("marked".into());
        let again = read_with(&rollout_with(labels), &mut known, rollout).expect("read");
        assert_eq!(
            again
                .metadata
                .labels
                .get("app.kubernetes.io/instance")
                .map(|s| s.as_str()),
            Some("marked")
        );
        assert_eq!(
            again
                .metadata
                .annotations
                .get("rollout.argoproj.io/revision")
                .map(|s| s.as_str()),
            Some("3")
        );
        // Other bytes are read, as serde reads them, and known in their place.
        let other = r#"{"app.kubernetes.io/instance":"shop-web-2"}"#;
        let (fast, serde) = both_raw(&rollout_with(other), &mut known, rollout, |_, _| {});
        assert_eq!(fast.as_deref(), serde.as_deref().ok());
        assert!(fast.is_some_and(|v| v.contains("shop-web-2")));
        // A fresh `Known` (an object not kept between versions) keeps nothing.
        let mut fresh = Known::default();
        read_with(&rollout_with(labels), &mut fresh, rollout).expect("read");
        assert!(fresh.labels.is_none() && fresh.annotations.is_none());
    }
}
