//! FNV hashing: the controller's pod-template hash, and the simulator's deterministic names.

use serde_json::Value;

use crate::json;

/// The alphabet `rand.SafeEncodeString` maps decimal digits to: `0 -> 4`, ..., `9 -> f`.
const DIGIT_ALPHABET: [char; 10] = ['4', '5', '6', '7', '8', '9', 'b', 'c', 'd', 'f'];

/// The prefix the upgraded controller's hash function mixes in before the template.
const UPGRADED_PREFIX: &[u8] = b"k8s.io/apimachinery@v0.31/";

/// 32-bit FNV-1a, the hash of Go's `hash/fnv.New32a`.
#[derive(Debug, Clone, Copy)]
struct Fnv32a(u32);

impl Fnv32a {
    fn new() -> Self {
        Fnv32a(0x811c_9dc5)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u32::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0193);
        }
    }
}

/// 64-bit FNV-1a.
pub(crate) fn fnv64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Which pod-template-hash function the simulated controller runs.
///
/// Controller upgrades have changed this function (upstream issues #4696 and #1356): identical
/// templates then hash differently and the controller starts a new ReplicaSet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HashFunction {
    /// FNV-32a over the template's JSON (plus the collision count), digits mapped to the alphabet.
    #[default]
    Original,
    /// The same after a controller upgrade changed the hashed bytes.
    Upgraded,
}

impl HashFunction {
    /// The `rollouts-pod-template-hash` of `template` (a Rollout's `spec.template`).
    pub fn pod_template_hash(self, template: &Value, collision_count: Option<i32>) -> String {
        let mut h = Fnv32a::new();
        if self == HashFunction::Upgraded {
            h.write(UPGRADED_PREFIX);
        }
        h.write(&json::to_bytes(template));
        if let Some(count) = collision_count {
            let mut bytes = [0u8; 8];
            bytes[..4].copy_from_slice(&count.to_le_bytes());
            h.write(&bytes);
        }
        safe_encode(h.0)
    }
}

/// The pod template hash of the original controller: FNV-32a over the compact JSON of `template`
/// plus, when set, the collision count as 8 little-endian bytes; its decimal digits mapped
/// `0..=9` to `4 5 6 7 8 9 b c d f`. At most 10 characters.
pub fn pod_template_hash(template: &Value, collision_count: Option<i32>) -> String {
    HashFunction::Original.pod_template_hash(template, collision_count)
}

/// `status.currentStepHash`: the same function over the JSON of `spec.strategy.canary.steps`.
pub fn steps_hash(steps: &Value) -> String {
    let mut h = Fnv32a::new();
    h.write(&json::to_bytes(steps));
    safe_encode(h.0)
}

/// The decimal digits of `n` mapped through the safe alphabet.
fn safe_encode(n: u32) -> String {
    n.to_string()
        .bytes()
        .map(|d| DIGIT_ALPHABET[usize::from(d - b'0')])
        .collect()
}

/// A version-4-shaped UUID derived from `seed`.
pub(crate) fn uid(seed: &str) -> String {
    let hi = fnv64(format!("uid-hi/{seed}").as_bytes());
    let lo = fnv64(format!("uid-lo/{seed}").as_bytes());
    let hi = (hi & 0xffff_ffff_ffff_0fff) | 0x0000_0000_0000_4000;
    let lo = (lo & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

/// 64 hex digits derived from `seed`, shaped like a SHA-256 (a Helm `checksum/config`).
pub fn fake_sha256(seed: &str) -> String {
    (0..4)
        .map(|i| format!("{:016x}", fnv64(format!("{i}/{seed}").as_bytes())))
        .collect()
}

/// The 5 characters the API server appends to a `generateName` (alphabet of
/// `utilrand.String`: no vowels, no digits that read as letters), derived from `seed`.
pub(crate) fn name_suffix(seed: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut h = fnv64(format!("name/{seed}").as_bytes());
    let len = ALPHABET.len() as u64;
    (0..5)
        .map(|_| {
            let c = ALPHABET[usize::try_from(h % len).unwrap_or(0)];
            h /= len;
            char::from(c)
        })
        .collect()
}

/// A 40-hex-digit git commit SHA derived from `seed` (well mixed: seeds that differ in one
/// character give unrelated SHAs).
pub(crate) fn git_sha(seed: &str) -> String {
    let mut mix = SplitMix::new(fnv64(format!("git/{seed}").as_bytes()));
    let mut s: String = (0..3).map(|_| format!("{:016x}", mix.next_u64())).collect();
    s.truncate(40);
    s
}

/// `sha256:` and 12 hex digits, the form the recorder's redaction gives every env value.
pub(crate) fn env_digest(seed: &str) -> String {
    let full = fake_sha256(seed);
    format!("sha256:{}", &full[..12])
}

/// A small deterministic generator (SplitMix64): the cluster's resourceVersion gaps, the scale
/// recording's choices, and tests' random inputs.
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    pub fn new(seed: u64) -> Self {
        SplitMix(seed)
    }

    /// A number below `n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn digits_map_to_the_safe_alphabet() {
        assert_eq!(safe_encode(1_234_567_890), "56789bcdf4");
        assert_eq!(safe_encode(0), "4");
        assert_eq!(safe_encode(u32::MAX).len(), 10);
    }

    #[test]
    fn fnv32a_matches_the_reference_vectors() {
        let mut h = Fnv32a::new();
        h.write(b"");
        assert_eq!(h.0, 0x811c_9dc5);
        let mut h = Fnv32a::new();
        h.write(b"a");
        assert_eq!(h.0, 0xe40c_292c);
        let mut h = Fnv32a::new();
        h.write(b"foobar");
        assert_eq!(h.0, 0xbf9c_f968);
    }

    #[test]
    fn identical_templates_hash_identically_and_the_upgrade_changes_the_hash() {
        let a = json!({"metadata": {"labels": {"app": "x"}}, "spec": {"containers": []}});
        let b = json!({"spec": {"containers": []}, "metadata": {"labels": {"app": "x"}}});
        let h = pod_template_hash(&a, None);
        assert_eq!(h, pod_template_hash(&b, None));
        assert!(h.len() <= 10 && h.chars().all(|c| DIGIT_ALPHABET.contains(&c)));
        assert_ne!(h, HashFunction::Upgraded.pod_template_hash(&a, None));
        assert_ne!(h, pod_template_hash(&a, Some(1)));
    }

    #[test]
    fn uids_are_uuid_shaped_and_stable() {
        let u = uid("payments/checkout-api");
        assert_eq!(u, uid("payments/checkout-api"));
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert_ne!(u, uid("payments/other"));
    }
}
