//! Small typed views of the objects detectors read, parsed leniently from the recorded JSON.
//!
//! Only the fields a detector needs are parsed; unknown fields are skipped. Fields the API has
//! written in more than one type over the years (`status.observedGeneration`: a decimal string
//! since Argo Rollouts v1.0, a hash before) are read as strings whatever their JSON type.

use std::borrow::Cow;
use std::collections::BTreeMap;

use compact_str::ToCompactString;
use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use crate::base::Str;
use crate::base::time::parse_rfc3339;

/// A scalar read without building a `serde_json::Value` (these run for every record).
enum Scalar {
    Null,
    Str(String),
    Int(i64),
    Other(String),
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string, a number, a bool or null")
    }
    fn visit_unit<E>(self) -> Result<Scalar, E> {
        Ok(Scalar::Null)
    }
    fn visit_none<E>(self) -> Result<Scalar, E> {
        Ok(Scalar::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Scalar, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
    fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Scalar, E> {
        Ok(Scalar::Str(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
        Ok(i64::try_from(v).map_or_else(|_| Scalar::Other(v.to_string()), Scalar::Int))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar::Other(v.to_string()))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Scalar, E> {
        Ok(Scalar::Other(v.to_string()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Scalar, A::Error> {
        while a.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Null)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Scalar, A::Error> {
        while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Null)
    }
}

/// Reads a string, a number or a bool as a string; `null` as `None`.
fn lenient_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Str>, D::Error> {
    Ok(match d.deserialize_any(ScalarVisitor)? {
        Scalar::Null => None,
        Scalar::Str(s) | Scalar::Other(s) => Some(s.into()),
        Scalar::Int(i) => Some(i.to_compact_string()),
    })
}

/// Reads an integer, or a string of decimal digits, as an integer.
fn lenient_int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(match d.deserialize_any(ScalarVisitor)? {
        Scalar::Int(i) => Some(i),
        Scalar::Str(s) => s.trim().parse().ok(),
        Scalar::Null | Scalar::Other(_) => None,
    })
}

/// The annotations any detector reads. Only these are kept when an object is parsed: the
/// others (a `kubectl.kubernetes.io/last-applied-configuration` can be kilobytes) are skipped
/// without being copied. A detector that reads another annotation adds its key here.
pub(crate) const KEPT_ANNOTATIONS: &[&str] = &[
    "rollout.argoproj.io/revision",
    "scale-down-deadline",
    "argocd.argoproj.io/tracking-id",
    DEPLOYMENT_REVISION,
];

/// The Deployment controller's revision number of a ReplicaSet (`kubectl rollout history`).
pub(crate) const DEPLOYMENT_REVISION: &str = "deployment.kubernetes.io/revision";

/// The labels any detector reads; the others are skipped without being copied, as for
/// [`KEPT_ANNOTATIONS`]. A detector that reads another label adds its key here.
pub(crate) const KEPT_LABELS: &[&str] = &[
    crate::base::HASH_LABEL,
    "kubernetes.io/service-name",
    "app.kubernetes.io/instance",
    FLUX_HELM_LABEL,
    FLUX_KUSTOMIZE_LABEL,
];

/// The label helm-controller puts on what a HelmRelease renders: its name.
pub(crate) const FLUX_HELM_LABEL: &str = "helm.toolkit.fluxcd.io/name";
/// The label kustomize-controller puts on what a Kustomization applies: its name.
pub(crate) const FLUX_KUSTOMIZE_LABEL: &str = "kustomize.toolkit.fluxcd.io/name";

/// A JSON value kept unparsed: exactly its bytes in the recorded object. A Rollout's or a
/// ReplicaSet's pod template is most of its bytes and is read only when it changed, so the fast
/// path keeps where it is in the record's object ([`RawJson::At`]) instead of a copy; serde,
/// whose `RawValue` may come from elsewhere, keeps the text.
#[derive(Debug)]
pub(crate) enum RawJson {
    /// The byte range of the value in the object of the record the view was read from.
    At(std::ops::Range<usize>),
    Text(Box<str>),
}

impl RawJson {
    /// The text, given `object`, the object of the record the view was read from (`None` when
    /// the range is not text in it: the view was read from another object).
    pub fn get<'a>(&'a self, object: &'a [u8]) -> Option<&'a str> {
        match self {
            RawJson::At(range) => std::str::from_utf8(object.get(range.clone())?).ok(),
            RawJson::Text(text) => Some(text),
        }
    }

    /// The bytes of [`get`](RawJson::get), unchecked.
    pub fn bytes<'a>(&'a self, object: &'a [u8]) -> Option<&'a [u8]> {
        match self {
            RawJson::At(range) => object.get(range.clone()),
            RawJson::Text(text) => Some(text.as_bytes()),
        }
    }

    /// Replaces a range with the text it names in `object` (the fast reader's contract
    /// compares views as text).
    pub fn resolve(raw: &mut Option<RawJson>, object: &str) {
        if let Some(text) = raw.as_ref().and_then(|r| r.get(object.as_bytes())) {
            *raw = Some(RawJson::Text(text.into()));
        }
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(d).map(|raw| RawJson::Text(raw.get().into()))
    }
}

/// `metadata` of any object. `M` is what is kept of `managedFields`: [`LastManagers`] for
/// Rollouts (whose transitions name who wrote them), nothing for the others (skipped unread).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Meta<M = Skipped, L = Kept<Labels>> {
    pub name: Str,
    // No `namespace`: the record's is the object's, and no detector reads it here.
    pub uid: Str,
    #[serde(deserialize_with = "lenient_int")]
    pub generation: Option<i64>,
    /// Only the [`KEPT_LABELS`]; a Pod's also as text ([`PodLabels`]).
    pub labels: L,
    /// Only the [`KEPT_ANNOTATIONS`].
    #[serde(deserialize_with = "kept_annotations")]
    pub annotations: Kept<Annotations>,
    pub owner_references: Vec<OwnerRef>,
    /// Reduced while parsing to the last writer of the object and of its status (Rollouts).
    pub managed_fields: M,
    pub deletion_timestamp: Option<Str>,
    /// When the API server created it: a ReplicaSet's tells when its revision began, which a
    /// recording that starts later reads as history.
    pub creation_timestamp: Option<Str>,
}

/// A field not read: skipped by the parser without being built.
#[derive(Debug, Default)]
pub(crate) struct Skipped;

impl<'de> Deserialize<'de> for Skipped {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(d).map(|_| Skipped)
    }
}

impl Meta<LastManagers> {
    /// The manager that wrote last, by `managedFields[].time`, taken out of the view: the one
    /// that wrote the subresource when `status` is true, the main resource otherwise.
    pub fn take_last_manager(&mut self, status: bool) -> Option<Str> {
        let last = if status {
            &mut self.managed_fields.status
        } else {
            &mut self.managed_fields.main
        };
        last.take().map(|(_, m)| m).filter(|m| !m.is_empty())
    }
}

/// A key read without copying it when it has no escapes.
struct Key<'a>(std::borrow::Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// A fixed list of keys whose values a [`Kept`] map holds.
pub(crate) trait KeptKeys {
    const KEYS: &'static [&'static str];
}

/// The [`KEPT_LABELS`].
#[derive(Debug)]
pub(crate) struct Labels;

impl KeptKeys for Labels {
    const KEYS: &'static [&'static str] = KEPT_LABELS;
}

/// The [`KEPT_ANNOTATIONS`].
#[derive(Debug)]
pub(crate) struct Annotations;

impl KeptKeys for Annotations {
    const KEYS: &'static [&'static str] = KEPT_ANNOTATIONS;
}

/// How many keys a [`Kept`] map can hold.
const KEPT_MAX: usize = 5;
const _: () = assert!(KEPT_LABELS.len() <= KEPT_MAX && KEPT_ANNOTATIONS.len() <= KEPT_MAX);

/// Labels or annotations reduced to the values of `K`'s keys: a value per key, in the order
/// of the list. Every object's metadata has one of each: a map per object, with its keys
/// copied, was a tenth of what parsing allocated.
pub(crate) struct Kept<K> {
    values: [Option<Str>; KEPT_MAX],
    keys: std::marker::PhantomData<K>,
}

impl<K> Clone for Kept<K> {
    fn clone(&self) -> Self {
        Kept {
            values: self.values.clone(),
            keys: std::marker::PhantomData,
        }
    }
}

impl<K> Default for Kept<K> {
    fn default() -> Self {
        Kept {
            values: Default::default(),
            keys: std::marker::PhantomData,
        }
    }
}

impl<K: KeptKeys> Kept<K> {
    fn index(key: &str) -> Option<usize> {
        K::KEYS.iter().position(|k| *k == key)
    }

    /// The value of `key`, if it is one of `K`'s keys and the object has it.
    pub fn get(&self, key: &str) -> Option<&Str> {
        self.values[Self::index(key)?].as_ref()
    }

    /// Takes the value of `key` out.
    pub fn remove(&mut self, key: &str) -> Option<Str> {
        self.values[Self::index(key)?].take()
    }

    /// Where the value of `key` goes, if `key` is one of `K`'s keys.
    pub fn slot(&mut self, key: &str) -> Option<&mut Option<Str>> {
        Some(&mut self.values[Self::index(key)?])
    }

    /// The keys present and their values, in the order of `K`'s list.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &Str)> + '_ {
        K::KEYS
            .iter()
            .zip(&self.values)
            .filter_map(|(k, v)| Some((*k, v.as_ref()?)))
    }
}

impl<K: KeptKeys> std::fmt::Debug for Kept<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// `metadata.annotations`, keeping only the [`KEPT_ANNOTATIONS`] (`null` reads as empty).
fn kept_annotations<'de, D: Deserializer<'de>>(d: D) -> Result<Kept<Annotations>, D::Error> {
    d.deserialize_any(KeptVisitor(std::marker::PhantomData))
}

/// `metadata.labels`, keeping only the [`KEPT_LABELS`] (`null` reads as empty).
impl<'de> Deserialize<'de> for Kept<Labels> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(KeptVisitor(std::marker::PhantomData))
    }
}

/// A Pod's `metadata.labels`: the [`KEPT_LABELS`], and where the whole map is in the object
/// (the labels of each role the rollouts controller moves are read from it, for the rollouts
/// that have some: pods change often, and most rollouts have none).
#[derive(Debug, Default)]
pub(crate) struct PodLabels {
    pub kept: Kept<Labels>,
    pub raw: Option<RawJson>,
}

impl<'de> Deserialize<'de> for PodLabels {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        if raw.get() == "null" {
            return Ok(PodLabels::default());
        }
        let kept =
            serde_json::from_str::<Kept<Labels>>(raw.get()).map_err(serde::de::Error::custom)?;
        Ok(PodLabels {
            kept,
            raw: Some(RawJson::Text(raw.get().into())),
        })
    }
}

/// A map of strings reduced to the entries of `K`'s keys; a later duplicate replaces an
/// earlier one, a `null` value is no value.
struct KeptVisitor<K>(std::marker::PhantomData<K>);

impl<'de, K: KeptKeys> Visitor<'de> for KeptVisitor<K> {
    type Value = Kept<K>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a map of strings")
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Kept::default())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        let mut kept = Kept::default();
        while let Some(Key(key)) = a.next_key::<Key<'de>>()? {
            match kept.slot(&key) {
                Some(slot) => {
                    if let Some(v) = a.next_value::<Option<Str>>()? {
                        *slot = Some(v);
                    }
                }
                None => {
                    a.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(kept)
    }
}

/// The last writer of an object and of its status subresource, by `managedFields[].time`
/// (RFC 3339, to the second): (time in nanoseconds, manager). On equal times the later entry
/// wins.
#[derive(Debug, Default)]
pub(crate) struct LastManagers {
    pub main: Option<(i64, Str)>,
    pub status: Option<(i64, Str)>,
    /// The last writer of the status that is not the Argo Rollouts controller (a person's
    /// `kubectl argo rollouts abort`, a GitOps tool's action); on equal times the later entry.
    pub status_user: Option<(i64, Str)>,
}

/// True for the field managers of the Argo Rollouts controller.
pub(crate) fn rollouts_controller(manager: &str) -> bool {
    manager == "rollouts-controller" || manager.starts_with("argo-rollouts")
}

/// One `metadata.managedFields[]` entry, borrowed where it can be.
#[derive(Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ManagedField<'a> {
    #[serde(borrow)]
    manager: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    subresource: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    time: Option<std::borrow::Cow<'a, str>>,
}

impl Default for ManagedField<'_> {
    fn default() -> Self {
        ManagedField {
            manager: std::borrow::Cow::Borrowed(""),
            subresource: None,
            time: None,
        }
    }
}

impl<'de> Deserialize<'de> for LastManagers {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = LastManagers;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of managed fields")
            }
            fn visit_unit<E>(self) -> Result<LastManagers, E> {
                Ok(LastManagers::default())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<LastManagers, A::Error> {
                let mut last = LastManagers::default();
                while let Some(m) = a.next_element::<ManagedField<'de>>()? {
                    let Some(t) = m.time.as_deref().and_then(parse_rfc3339) else {
                        continue;
                    };
                    let slot = if m.subresource.as_deref() == Some("status") {
                        &mut last.status
                    } else {
                        &mut last.main
                    };
                    let status = m.subresource.as_deref() == Some("status");
                    if status
                        && !rollouts_controller(&m.manager)
                        && last
                            .status_user
                            .as_ref()
                            .is_none_or(|(best, _)| t.0 >= *best)
                    {
                        last.status_user = Some((t.0, Str::from(m.manager.as_ref())));
                    }
                    if slot.as_ref().is_none_or(|(best, _)| t.0 >= *best) {
                        *slot = Some((t.0, Str::from(m.manager)));
                    }
                }
                Ok(last)
            }
        }
        d.deserialize_any(Entries)
    }
}

/// One `metadata.ownerReferences[]` entry.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct OwnerRef {
    pub kind: Str,
    pub name: Str,
    pub uid: Str,
    pub controller: Option<bool>,
}

/// A canary step, reduced to what the state machine needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    SetWeight(i64),
    /// `pause: {}` (no duration: waits for a promote) or `pause: {duration: ...}`.
    Pause {
        indefinite: bool,
    },
    Other(String),
}

impl Step {
    pub fn is_pause(&self) -> bool {
        matches!(self, Step::Pause { .. })
    }

    pub fn describe(&self) -> String {
        match self {
            Step::SetWeight(w) => format!("setWeight {w}"),
            Step::Pause { indefinite: true } => "pause until promoted".to_owned(),
            Step::Pause { indefinite: false } => "timed pause".to_owned(),
            Step::Other(k) => k.clone(),
        }
    }
}

/// `pause: {duration: ...}`: only whether a duration is set matters.
#[derive(Default, Deserialize)]
#[serde(default)]
struct PauseBody {
    #[serde(deserialize_with = "lenient_string")]
    duration: Option<Str>,
}

impl<'de> Deserialize<'de> for Step {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct StepVisitor;
        impl<'de> Visitor<'de> for StepVisitor {
            type Value = Step;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a canary step")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Step, A::Error> {
                let mut weight = None;
                let mut pause = None;
                let mut first_other = None;
                while let Some(key) = a.next_key::<String>()? {
                    match key.as_str() {
                        "setWeight" => {
                            weight = Some(match a.next_value_seed(ScalarSeed)? {
                                Scalar::Int(i) => i,
                                Scalar::Str(s) => s.trim().parse().unwrap_or(0),
                                _ => 0,
                            });
                        }
                        "pause" => {
                            let body: Option<PauseBody> = a.next_value()?;
                            pause = Some(body.unwrap_or_default().duration.is_none());
                        }
                        _ => {
                            a.next_value::<IgnoredAny>()?;
                            first_other.get_or_insert(key);
                        }
                    }
                }
                Ok(match (weight, pause) {
                    (Some(w), _) => Step::SetWeight(w),
                    (None, Some(indefinite)) => Step::Pause { indefinite },
                    _ => Step::Other(first_other.unwrap_or_else(|| "empty".to_owned())),
                })
            }
            fn visit_unit<E>(self) -> Result<Step, E> {
                Ok(Step::Other("unknown".to_owned()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Step, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Step::Other("unknown".to_owned()))
            }
            fn visit_str<E>(self, _: &str) -> Result<Step, E> {
                Ok(Step::Other("unknown".to_owned()))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Step, E> {
                Ok(Step::Other("unknown".to_owned()))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Step, E> {
                Ok(Step::Other("unknown".to_owned()))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Step, E> {
                Ok(Step::Other("unknown".to_owned()))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Step, E> {
                Ok(Step::Other("unknown".to_owned()))
            }
        }
        d.deserialize_any(StepVisitor)
    }
}

/// Deserializes one value as a [`Scalar`].
struct ScalarSeed;

impl<'de> serde::de::DeserializeSeed<'de> for ScalarSeed {
    type Value = Scalar;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Scalar, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Canary {
    pub steps: Option<Vec<Step>>,
    pub traffic_routing: Option<TrafficRouting>,
    pub canary_service: Option<Str>,
    pub stable_service: Option<Str>,
    pub canary_metadata: Option<EphemeralMetadata>,
    pub stable_metadata: Option<EphemeralMetadata>,
    /// How long the controller keeps a replaced ReplicaSet up; only with traffic routing.
    #[serde(deserialize_with = "lenient_int")]
    pub scale_down_delay_seconds: Option<i64>,
    /// How long it keeps the canary up after an abort (default 30; with traffic routing).
    #[serde(deserialize_with = "lenient_int")]
    pub abort_scale_down_delay_seconds: Option<i64>,
    /// The stable ReplicaSet is scaled down as the canary's weight rises, and back up on abort.
    pub dynamic_stable_scale: Option<bool>,
}

/// `spec.strategy.canary.trafficRouting`: which routers the controller sets weights on. NGINX,
/// Istio and the Gateway API plugin are read; any other router is only "set".
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct TrafficRouting {
    pub nginx: Option<NginxRouting>,
    pub istio: Option<IstioRouting>,
    pub plugins: Option<RouterPlugins>,
}

/// `trafficRouting.istio`: the VirtualServices whose route weights the controller sets, and
/// the DestinationRule whose subsets it points at each revision.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct IstioRouting {
    pub virtual_service: Option<IstioVirtualService>,
    pub virtual_services: Option<Vec<IstioVirtualService>>,
    pub destination_rule: Option<IstioDestinationRule>,
}

/// One VirtualService of `trafficRouting.istio`: `name` (or `name.namespace`) and the HTTP
/// routes it sets weights on (none: its only route, or its first unnamed one).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct IstioVirtualService {
    pub name: Str,
    pub routes: Option<Vec<Str>>,
}

/// `trafficRouting.istio.destinationRule`: the subsets that stand for each role.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct IstioDestinationRule {
    pub name: Str,
    pub canary_subset_name: Option<Str>,
    pub stable_subset_name: Option<Str>,
}

/// `trafficRouting.plugins`: of the router plugins, the Gateway API one is read.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RouterPlugins {
    #[serde(rename = "argoproj-labs/gatewayAPI")]
    pub gateway_api: Option<GatewayApiRouting>,
}

/// The Gateway API plugin's configuration: the HTTPRoutes whose backend weights it sets.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct GatewayApiRouting {
    pub http_route: Option<Str>,
    pub http_routes: Option<Vec<GatewayApiRoute>>,
    pub namespace: Option<Str>,
}

/// One entry of the Gateway API plugin's `httpRoutes`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct GatewayApiRoute {
    pub name: Str,
}

/// `trafficRouting.nginx`: the Ingresses the controller makes a canary Ingress of, and the
/// prefix of the annotations it writes there.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct NginxRouting {
    pub stable_ingress: Option<Str>,
    pub stable_ingresses: Option<Vec<Str>>,
    pub annotation_prefix: Option<Str>,
}

/// `canaryMetadata` / `stableMetadata`: labels the controller puts on the pods of that role,
/// after the pod-template hash is computed (and changes in place when the role changes).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct EphemeralMetadata {
    pub labels: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Strategy {
    pub canary: Option<Canary>,
    pub blue_green: Option<BlueGreen>,
}

/// `spec.strategy.blueGreen`: the Services it switches.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct BlueGreen {
    pub active_service: Option<Str>,
    pub preview_service: Option<Str>,
    /// The labels the controller puts on the active and the preview pods, as `stableMetadata`
    /// and `canaryMetadata` do.
    pub active_metadata: Option<EphemeralMetadata>,
    pub preview_metadata: Option<EphemeralMetadata>,
    /// How long the old active ReplicaSet stays up after the switch (default 30; 0 keeps it).
    #[serde(deserialize_with = "lenient_int")]
    pub scale_down_delay_seconds: Option<i64>,
    /// How long the preview ReplicaSet stays up after an abort (default 30).
    #[serde(deserialize_with = "lenient_int")]
    pub abort_scale_down_delay_seconds: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct RolloutSpec {
    #[serde(deserialize_with = "lenient_int")]
    pub replicas: Option<i64>,
    pub paused: Option<bool>,
    pub template: Option<RawJson>,
    /// Shared: a Rollout's records almost all repeat it (the skimming reader hands out the one
    /// it read last), so a replay can tell an unchanged strategy by pointer.
    pub strategy: std::sync::Arc<Strategy>,
    #[serde(deserialize_with = "lenient_int")]
    pub revision_history_limit: Option<i64>,
    pub workload_ref: Option<WorkloadRef>,
    /// How long a revision may make no progress before the rollout is Degraded (default 600).
    #[serde(deserialize_with = "lenient_int")]
    pub progress_deadline_seconds: Option<i64>,
    /// The controller aborts a rollout that passes its progress deadline.
    pub progress_deadline_abort: Option<bool>,
}

/// `spec.workloadRef`: the Deployment whose pod template the rollout runs, and when the
/// controller scales that Deployment down (`never`, the default; `onsuccess`; `progressively`).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct WorkloadRef {
    pub kind: Option<Str>,
    pub name: Option<Str>,
    pub scale_down: Option<Str>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct PauseCondition {
    pub reason: Str,
    pub start_time: Option<Str>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Condition {
    #[serde(rename = "type")]
    pub type_: Str,
    pub status: Str,
    pub reason: Option<Str>,
    pub message: Option<Str>,
}

/// A [`Condition`] as parsed, borrowing its strings: only the kept ones are copied.
#[derive(Default, Deserialize)]
#[serde(default)]
struct ConditionRef<'a> {
    #[serde(rename = "type", borrow)]
    type_: Cow<'a, str>,
    #[serde(borrow)]
    status: Cow<'a, str>,
    #[serde(borrow)]
    reason: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
}

/// `status.conditions` of a Rollout, keeping the `Progressing` ones (`null` reads as `None`).
fn progressing_conditions<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<Condition>>, D::Error> {
    let Some(all) = Option::<Vec<ConditionRef<'de>>>::deserialize(d)? else {
        return Ok(None);
    };
    Ok(Some(
        all.into_iter()
            .filter(|c| condition_kept(&c.type_))
            .map(|c| Condition {
                type_: c.type_.into(),
                status: c.status.into(),
                reason: c.reason.map(Str::from),
                message: c.message.map(Str::from),
            })
            .collect(),
    ))
}

/// A [`PodCondition`] as parsed, borrowing its strings: only the kept ones are copied.
#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct PodConditionRef<'a> {
    #[serde(rename = "type", borrow)]
    type_: Cow<'a, str>,
    #[serde(borrow)]
    status: Cow<'a, str>,
    #[serde(borrow)]
    last_transition_time: Option<Cow<'a, str>>,
    #[serde(borrow)]
    reason: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
}

/// True for the pod conditions kept: `Ready`, and `PodScheduled` when False (the scheduler's
/// reason it cannot place the pod).
pub(crate) fn kept_condition(type_: &str, status: &str) -> bool {
    type_ == "Ready" || (type_ == "PodScheduled" && status == "False")
}

/// `status.conditions` of a Pod, keeping the `Ready` ones and an unscheduled one.
fn ready_conditions<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<PodCondition>, D::Error> {
    let all = Vec::<PodConditionRef<'de>>::deserialize(d)?;
    Ok(all
        .into_iter()
        .filter(|c| kept_condition(&c.type_, &c.status))
        .map(|c| {
            let unscheduled = c.type_ != "Ready";
            PodCondition {
                type_: c.type_.into(),
                status: c.status.into(),
                last_transition_time: c.last_transition_time.map(Str::from),
                reason: c.reason.filter(|_| unscheduled).map(Str::from),
                message: c.message.filter(|_| unscheduled).map(Str::from),
            }
        })
        .collect())
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct WeightDest {
    #[serde(deserialize_with = "lenient_int")]
    pub weight: Option<i64>,
    pub pod_template_hash: Option<Str>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Weights {
    pub canary: Option<WeightDest>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct CanaryStatus {
    /// Legacy (< v0.8) place of the stable hash.
    #[serde(rename = "stableRS")]
    pub stable_rs: Option<Str>,
    pub weights: Option<Weights>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct RolloutStatus {
    #[serde(deserialize_with = "lenient_string")]
    pub observed_generation: Option<Str>,
    pub current_pod_hash: Option<Str>,
    pub current_step_hash: Option<Str>,
    #[serde(deserialize_with = "lenient_int")]
    pub current_step_index: Option<i64>,
    #[serde(rename = "stableRS")]
    pub stable_rs: Option<Str>,
    pub phase: Option<Str>,
    pub message: Option<Str>,
    pub pause_conditions: Option<Vec<PauseCondition>>,
    pub controller_pause: Option<bool>,
    pub abort: Option<bool>,
    pub promote_full: Option<bool>,
    /// Only the conditions read, `Progressing` and `InvalidSpec`: the others are checked and
    /// skipped.
    #[serde(deserialize_with = "progressing_conditions")]
    pub conditions: Option<Vec<Condition>>,
    pub canary: Option<CanaryStatus>,
    /// The replica counts, for a phase derived where the controller wrote none (pre-v1.0).
    #[serde(deserialize_with = "lenient_int")]
    pub replicas: Option<i64>,
    #[serde(deserialize_with = "lenient_int")]
    pub updated_replicas: Option<i64>,
    #[serde(deserialize_with = "lenient_int")]
    pub available_replicas: Option<i64>,
    pub blue_green: Option<BlueGreenStatus>,
}

/// `status.blueGreen`: the hash the controller put on the active Service's selector.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct BlueGreenStatus {
    pub active_selector: Option<Str>,
}

/// The condition types a Rollout's status is read for.
pub(crate) fn condition_kept(type_: &str) -> bool {
    type_ == "Progressing" || type_ == "InvalidSpec"
}

/// An `argoproj.io/v1alpha1` Rollout.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RolloutView {
    pub metadata: Meta<LastManagers>,
    pub spec: RolloutSpec,
    pub status: RolloutStatus,
}

impl RolloutView {
    pub fn steps(&self) -> &[Step] {
        self.spec
            .strategy
            .canary
            .as_ref()
            .and_then(|c| c.steps.as_deref())
            .unwrap_or(&[])
    }

    pub fn canary_weight(&self) -> Option<i64> {
        self.status
            .canary
            .as_ref()?
            .weights
            .as_ref()?
            .canary
            .as_ref()?
            .weight
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct RsSpec {
    #[serde(deserialize_with = "lenient_int")]
    pub replicas: Option<i64>,
    /// A Deployment's `spec.revisionHistoryLimit` (a ReplicaSet has none).
    #[serde(deserialize_with = "lenient_int")]
    pub revision_history_limit: Option<i64>,
    /// Kept unparsed: the state machine parses it only when it changed.
    pub template: Option<RawJson>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct RsStatus {
    #[serde(deserialize_with = "lenient_int")]
    pub replicas: Option<i64>,
    #[serde(deserialize_with = "lenient_int")]
    pub ready_replicas: Option<i64>,
    #[serde(deserialize_with = "lenient_int")]
    pub available_replicas: Option<i64>,
}

/// An `apps/v1` ReplicaSet.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ReplicaSetView {
    pub metadata: Meta,
    pub spec: RsSpec,
    pub status: RsStatus,
    /// A digest of `spec.template`'s bytes, computed where the object is parsed (off the
    /// replaying thread): the template is parsed again only when it changes.
    #[serde(skip)]
    pub template_digest: u64,
}

impl ReplicaSetView {
    /// The pod-template-hash label, if any.
    pub fn hash(&self) -> Option<&str> {
        self.metadata
            .labels
            .get(crate::base::HASH_LABEL)
            .map(Str::as_str)
    }

    /// The Rollout controlling this RS: (name, uid).
    /// The Deployment that owns it, by name.
    pub fn deployment_owner(&self) -> Option<&str> {
        self.metadata
            .owner_references
            .iter()
            .find(|o| o.kind == "Deployment" && o.controller != Some(false))
            .map(|o| o.name.as_str())
    }

    pub fn rollout_owner(&self) -> Option<(&str, &str)> {
        self.metadata
            .owner_references
            .iter()
            .find(|o| o.kind == "Rollout" && o.controller != Some(false))
            .map(|o| (o.name.as_str(), o.uid.as_str()))
    }

    pub fn scale_down_deadline(&self) -> Option<&str> {
        self.metadata
            .annotations
            .get("scale-down-deadline")
            .map(Str::as_str)
    }
}

/// An `apps/v1` Deployment: its replicas and pod template (the template of a rollout's
/// `workloadRef`), and who changed it last. Its spec and status have a ReplicaSet's shape.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct DeploymentView {
    pub metadata: Meta<LastManagers>,
    pub spec: RsSpec,
    pub status: RsStatus,
}

/// A `networking.k8s.io/v1` Ingress: its rules (host, path, backend Service), its annotations
/// (the canary ones the rollouts controller writes for NGINX) and who wrote it. Read by serde
/// alone: Ingresses change rarely.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct IngressView {
    pub metadata: IngressMeta,
    pub spec: IngressSpec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct IngressMeta {
    pub annotations: BTreeMap<String, String>,
    pub managed_fields: LastManagers,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct IngressSpec {
    pub ingress_class_name: Option<Str>,
    pub rules: Option<Vec<IngressRule>>,
    pub default_backend: Option<IngressBackend>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct IngressRule {
    pub host: Option<Str>,
    pub http: Option<IngressHttp>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct IngressHttp {
    pub paths: Vec<IngressPath>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct IngressPath {
    pub path: Option<Str>,
    pub backend: IngressBackend,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct IngressBackend {
    pub service: Option<IngressService>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct IngressService {
    pub name: Str,
}

/// A Gateway API HTTPRoute: the hosts and paths of each rule and the weighted Services it sends
/// them to. Read by serde alone: routes change rarely.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct HttpRouteView {
    pub metadata: IngressMeta,
    pub spec: HttpRouteSpec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct HttpRouteSpec {
    pub hostnames: Vec<Str>,
    pub rules: Vec<HttpRouteRule>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct HttpRouteRule {
    pub name: Option<Str>,
    pub matches: Vec<HttpRouteMatch>,
    pub backend_refs: Vec<HttpBackendRef>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct HttpRouteMatch {
    pub path: Option<HttpPathMatch>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct HttpPathMatch {
    pub value: Option<Str>,
}

/// A backend of an HTTPRoute rule: a Service unless `group`/`kind` say otherwise.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct HttpBackendRef {
    pub group: Option<Str>,
    pub kind: Option<Str>,
    pub name: Str,
    pub namespace: Option<Str>,
    #[serde(deserialize_with = "lenient_int")]
    pub weight: Option<i64>,
}

/// An Istio VirtualService: its hosts and, for each HTTP route, the URIs it matches and the
/// weighted destinations (a Service host, a DestinationRule subset) it sends them to.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct VirtualServiceView {
    pub metadata: IngressMeta,
    pub spec: VirtualServiceSpec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct VirtualServiceSpec {
    pub hosts: Vec<Str>,
    pub http: Vec<VirtualServiceHttp>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct VirtualServiceHttp {
    pub name: Option<Str>,
    #[serde(rename = "match")]
    pub matches: Vec<VirtualServiceMatch>,
    pub route: Vec<VirtualServiceRoute>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct VirtualServiceMatch {
    pub uri: Option<StringMatch>,
}

/// Istio's StringMatch: one of its forms is set.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct StringMatch {
    pub exact: Option<Str>,
    pub prefix: Option<Str>,
    pub regex: Option<Str>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct VirtualServiceRoute {
    pub destination: VirtualServiceDestination,
    #[serde(deserialize_with = "lenient_int")]
    pub weight: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct VirtualServiceDestination {
    pub host: Str,
    pub subset: Option<Str>,
}

/// A `v1` Service: its selector, and who wrote its selector's `rollouts-pod-template-hash`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ServiceView {
    pub metadata: Meta<Vec<ServiceManager>>,
    pub spec: ServiceSpec,
}

/// One `metadata.managedFields[]` entry of a Service: its manager, and whether it owns the
/// selector. The selector is atomic (`mapType=atomic`): one manager owns it whole, the last to
/// write it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ServiceManager {
    pub manager: Str,
    #[serde(rename = "fieldsV1")]
    pub fields: Option<SpecFields>,
}

/// `fieldsV1` down to `f:spec`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct SpecFields {
    #[serde(rename = "f:spec")]
    pub spec: Option<SelectorFields>,
}

/// `f:spec` down to `f:selector`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct SelectorFields {
    #[serde(rename = "f:selector")]
    pub selector: Option<Skipped>,
}

impl ServiceView {
    /// The field manager that last wrote the selector, when the managed fields say.
    pub fn selector_writer(&mut self) -> Option<Str> {
        self.metadata
            .managed_fields
            .iter_mut()
            .find(|m| {
                m.fields
                    .as_ref()
                    .and_then(|f| f.spec.as_ref())
                    .is_some_and(|s| s.selector.is_some())
            })
            .map(|m| std::mem::take(&mut m.manager))
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ServiceSpec {
    /// `None` (no selector: endpoints managed by hand) differs from an empty map.
    pub selector: Option<BTreeMap<String, String>>,
}

/// A `discovery.k8s.io/v1` EndpointSlice.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct EndpointSliceView {
    pub metadata: Meta,
    /// Shared with what the reader keeps of the slice: a slice's next version holds most of the
    /// same endpoints, taken again rather than read and built again.
    pub endpoints: Option<Vec<std::sync::Arc<Endpoint>>>,
}

impl EndpointSliceView {
    /// The Service it belongs to (`kubernetes.io/service-name`).
    pub fn service(&self) -> Option<&str> {
        self.metadata
            .labels
            .get("kubernetes.io/service-name")
            .map(Str::as_str)
            .filter(|s| !s.is_empty())
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Endpoint {
    pub addresses: Vec<Str>,
    pub conditions: EndpointConditions,
    pub target_ref: Option<TargetRef>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct EndpointConditions {
    /// Absent means ready (the API's documented default).
    pub ready: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct TargetRef {
    pub kind: Str,
    pub name: Str,
}

/// A `v1` Pod: its revision, readiness and the images it runs.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct PodView {
    pub metadata: Meta<Skipped, PodLabels>,
    pub spec: PodSpec,
    pub status: PodStatus,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct PodSpec {
    pub containers: Vec<Container>,
    pub init_containers: Vec<Container>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Container {
    pub name: Str,
    pub image: Str,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct PodStatus {
    /// Only the `Ready` condition, the one read: the others are checked and skipped.
    #[serde(deserialize_with = "ready_conditions")]
    pub conditions: Vec<PodCondition>,
    pub container_statuses: Vec<ContainerStatus>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct PodCondition {
    #[serde(rename = "type")]
    pub type_: Str,
    pub status: Str,
    pub last_transition_time: Option<Str>,
    pub reason: Option<Str>,
    pub message: Option<Str>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct ContainerStatus {
    pub name: Str,
    pub image: Str,
    #[serde(rename = "imageID")]
    pub image_id: Str,
    pub state: ContainerState,
    pub last_state: ContainerState,
}

/// A container's `state` or `lastState`: why it waits, or why it ended.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ContainerState {
    pub waiting: Option<StateDetail>,
    pub terminated: Option<StateDetail>,
}

/// `waiting` or `terminated`: its reason, message and exit code.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct StateDetail {
    pub reason: Option<Str>,
    pub message: Option<Str>,
    #[serde(deserialize_with = "lenient_int")]
    pub exit_code: Option<i64>,
}

impl PodView {
    /// `Ready` is True, and since when (the condition's lastTransitionTime).
    pub fn ready(&self) -> (bool, Option<&str>) {
        self.status
            .conditions
            .iter()
            .find(|c| c.type_ == "Ready")
            .map(|c| (c.status == "True", c.last_transition_time.as_deref()))
            .unwrap_or((false, None))
    }

    /// The ReplicaSet controlling it.
    pub fn owner_replicaset(&self) -> Option<&str> {
        self.metadata
            .owner_references
            .iter()
            .find(|o| o.kind == "ReplicaSet" && o.controller != Some(false))
            .map(|o| o.name.as_str())
    }
}

/// An Argo CD `Application`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ApplicationView {
    pub metadata: Meta,
    pub status: AppStatus,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct AppStatus {
    pub sync: AppSync,
    pub health: AppHealth,
    /// These three are shared with the Application's last version when the same (most records
    /// of an Application are refreshes that change none of them).
    pub history: std::sync::Arc<Vec<AppHistory>>,
    pub resources: std::sync::Arc<Vec<AppResource>>,
    pub operation_state: Option<std::sync::Arc<AppOperationState>>,
}

/// `status.operationState`: the last sync operation, as far as telling a self-heal and a
/// failed sync need it.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct AppOperationState {
    pub operation: Option<AppOperation>,
    /// `Running`, `Succeeded`, `Failed`, `Error`, `Terminating`.
    pub phase: Option<Str>,
    pub message: Option<Str>,
    pub sync_result: Option<AppSyncResult>,
}

/// `syncResult`: of its resources, only those that failed (a hook whose phase is `Failed` or
/// `Error`, a resource whose status is `SyncFailed`) are kept.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AppSyncResult {
    #[serde(deserialize_with = "failed_resources")]
    pub resources: Vec<AppResultResource>,
}

/// One resource of a sync's result.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct AppResultResource {
    pub kind: Str,
    pub name: Str,
    pub status: Option<Str>,
    pub hook_type: Option<Str>,
    pub hook_phase: Option<Str>,
    pub message: Option<Str>,
}

impl AppResultResource {
    /// A hook that failed, or a resource that did not sync.
    pub fn failed(&self) -> bool {
        matches!(self.hook_phase.as_deref(), Some("Failed" | "Error"))
            || self.status.as_deref() == Some("SyncFailed")
    }
}

fn failed_resources<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<AppResultResource>, D::Error> {
    let all: Option<Vec<AppResultResource>> = Option::deserialize(d)?;
    Ok(all
        .unwrap_or_default()
        .into_iter()
        .filter(AppResultResource::failed)
        .collect())
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AppOperation {
    pub sync: Option<AppOperationSync>,
}

/// A sync operation: how many self-heal attempts it is (Argo CD counts them in the operation
/// it starts), and the resources it was limited to (a partial sync; none: all of them).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct AppOperationSync {
    #[serde(deserialize_with = "lenient_int")]
    pub auto_heal_attempts_count: Option<i64>,
    pub resources: Option<Vec<AppResource>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AppSync {
    pub status: Option<Str>,
    #[serde(deserialize_with = "lenient_string")]
    pub revision: Option<Str>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AppHealth {
    pub status: Option<Str>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct AppHistory {
    #[serde(deserialize_with = "lenient_string")]
    pub revision: Option<Str>,
    pub revisions: Option<Vec<Str>>,
    pub deployed_at: Option<Str>,
    #[serde(deserialize_with = "lenient_int")]
    pub id: Option<i64>,
    /// When the sync began (`deployedAt` is when it ended).
    pub deploy_started_at: Option<Str>,
    pub initiated_by: Option<AppInitiator>,
    /// What was deployed: the source, or the sources of a multi-source Application (Argo CD
    /// writes an empty `source` beside them).
    pub source: Option<AppSource>,
    pub sources: Option<Vec<AppSource>>,
}

/// Who started a sync: `automated` (the automated sync policy, self-heal included) or a user.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AppInitiator {
    pub username: Option<Str>,
    pub automated: Option<bool>,
}

/// One source of a sync, as far as telling two syncs apart needs it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AppSource {
    #[serde(rename = "repoURL")]
    pub repo_url: Option<Str>,
    #[serde(rename = "targetRevision")]
    pub target_revision: Option<Str>,
    pub helm: Option<AppHelm>,
}

/// The Helm settings of a source that pipelines write into an Application: its parameters.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AppHelm {
    pub parameters: Option<Vec<AppParameter>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AppParameter {
    pub name: Option<Str>,
    #[serde(deserialize_with = "lenient_string")]
    pub value: Option<Str>,
}

impl AppHistory {
    /// The revision deployed (multi-source apps list several: joined).
    pub fn revision(&self) -> Option<String> {
        self.revision
            .as_deref()
            .filter(|r| !r.is_empty())
            .map(str::to_owned)
            .or_else(|| self.revisions.as_ref().map(|r| r.join("+")))
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AppResource {
    pub kind: Str,
    pub namespace: Str,
    pub name: Str,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(json: &str) -> Step {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn steps_parse_without_building_values() {
        assert_eq!(step(r#"{"setWeight": 20}"#), Step::SetWeight(20));
        assert_eq!(step(r#"{"setWeight": "30"}"#), Step::SetWeight(30));
        assert_eq!(step(r#"{"pause": {}}"#), Step::Pause { indefinite: true });
        assert_eq!(step(r#"{"pause": null}"#), Step::Pause { indefinite: true });
        assert_eq!(
            step(r#"{"pause": {"duration": "30s"}}"#),
            Step::Pause { indefinite: false }
        );
        assert_eq!(
            step(r#"{"pause": {"duration": 30}}"#),
            Step::Pause { indefinite: false }
        );
        assert_eq!(
            step(r#"{"analysis": {"templates": [{"templateName": "x"}]}}"#),
            Step::Other("analysis".into())
        );
        assert_eq!(step("{}"), Step::Other("empty".into()));
        assert_eq!(step("[1]"), Step::Other("unknown".into()));
        let steps: Vec<Step> =
            serde_json::from_str(r#"[{"setWeight": 5}, {"pause": {"duration": "1m"}}]"#).unwrap();
        assert_eq!(steps.len(), 2);
    }

    #[test]
    fn lenient_fields_take_strings_numbers_and_null() {
        let st = |j: &str| serde_json::from_str::<RolloutStatus>(j).unwrap();
        assert_eq!(
            st(r#"{"observedGeneration": "7"}"#)
                .observed_generation
                .as_deref(),
            Some("7")
        );
        assert_eq!(
            st(r#"{"observedGeneration": 7}"#)
                .observed_generation
                .as_deref(),
            Some("7")
        );
        assert_eq!(
            st(r#"{"observedGeneration": null}"#).observed_generation,
            None
        );
        assert_eq!(
            st(r#"{"currentStepIndex": "2"}"#).current_step_index,
            Some(2)
        );
        assert_eq!(st(r#"{"currentStepIndex": 3}"#).current_step_index, Some(3));
        assert_eq!(
            st(r#"{"currentStepIndex": {"x": 1}}"#).current_step_index,
            None
        );
        assert_eq!(st(r#"{"currentStepIndex": true}"#).current_step_index, None);
    }
}

/// An Argo Rollouts AnalysisRun: its owner and revision, each metric's provider and condition,
/// and what each measured. Read by serde alone (one record per measurement, seconds apart).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AnalysisRunView {
    pub metadata: RunMeta,
    pub spec: RunSpec,
    pub status: RunStatus,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct RunMeta {
    pub labels: BTreeMap<String, String>,
    pub owner_references: Vec<OwnerRef>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct RunSpec {
    pub metrics: Vec<MetricSpec>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct MetricSpec {
    pub name: String,
    pub success_condition: Option<String>,
    pub failure_condition: Option<String>,
    pub failure_limit: Option<serde_json::Value>,
    pub inconclusive_limit: Option<serde_json::Value>,
    pub provider: Option<serde_json::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct RunStatus {
    pub phase: Option<String>,
    pub message: Option<String>,
    pub started_at: Option<String>,
    pub metric_results: Vec<MetricResult>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct MetricResult {
    pub name: String,
    pub phase: Option<String>,
    pub message: Option<String>,
    pub count: Option<i64>,
    pub measurements: Vec<MeasurementView>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct MeasurementView {
    pub phase: Option<String>,
    pub value: Option<String>,
    pub message: Option<String>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// What the provider keeps of it: a job metric's `job-name` and `job-namespace`.
    pub metadata: BTreeMap<String, String>,
}

/// A Flux HelmRelease or Kustomization: what it last attempted, and a HelmRelease's history of
/// Helm releases. Read by serde alone (one record per reconcile).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct FluxView {
    pub status: FluxStatus,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct FluxStatus {
    pub last_attempted_revision: Option<String>,
    /// helm-controller v2: the digest of the values attempted.
    pub last_attempted_config_digest: Option<String>,
    /// helm-controller v2beta1: the checksum of the values attempted.
    pub last_attempted_values_checksum: Option<String>,
    /// helm-controller v2: the Helm releases, newest first.
    pub history: Vec<FluxSnapshot>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct FluxSnapshot {
    pub chart_version: Option<String>,
    pub config_digest: Option<String>,
    pub version: Option<i64>,
    /// When the release name was first deployed: the same for every Helm release of it.
    pub first_deployed: Option<String>,
    /// When this Helm release was deployed.
    pub last_deployed: Option<String>,
    pub status: Option<String>,
}

/// The Flux object that applied an object, by its labels: (`HelmRelease` or `Kustomization`,
/// its name).
pub(crate) fn flux_of<M>(meta: &Meta<M>) -> Option<(&'static str, &str)> {
    let labels = &meta.labels;
    labels
        .get(FLUX_HELM_LABEL)
        .map(|n| ("HelmRelease", n.as_str()))
        .or_else(|| {
            labels
                .get(FLUX_KUSTOMIZE_LABEL)
                .map(|n| ("Kustomization", n.as_str()))
        })
}

/// The Argo CD Application that tracks an object: the `argocd.argoproj.io/tracking-id`
/// annotation (`<app>:<group>/<kind>:<ns>/<name>`), else the `app.kubernetes.io/instance` label
/// (Argo CD's default label tracking).
pub(crate) fn tracking_app<M>(meta: &Meta<M>) -> Option<&str> {
    if let Some(id) = meta.annotations.get("argocd.argoproj.io/tracking-id") {
        if let Some((app, _)) = id.split_once(':') {
            if !app.is_empty() {
                // `<namespace>_<name>` when apps live outside the control-plane namespace.
                return Some(app.rsplit('_').next().unwrap_or(app));
            }
        }
    }
    meta.labels
        .get("app.kubernetes.io/instance")
        .map(Str::as_str)
        .filter(|s| !s.is_empty())
}

/// An Event (`v1`, or `events.k8s.io/v1`, whose fields have other names), read from a list
/// only: what the cluster kept of what its controllers did before a recording began. Read by
/// serde alone.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct EventView {
    pub metadata: EventMeta,
    pub involved_object: EventObject,
    pub regarding: EventObject,
    pub reason: Str,
    pub message: Option<String>,
    pub note: Option<String>,
    #[serde(deserialize_with = "lenient_int")]
    pub count: Option<i64>,
    #[serde(deserialize_with = "lenient_int")]
    pub deprecated_count: Option<i64>,
    pub first_timestamp: Option<Str>,
    pub last_timestamp: Option<Str>,
    pub deprecated_first_timestamp: Option<Str>,
    pub deprecated_last_timestamp: Option<Str>,
    pub event_time: Option<Str>,
    pub series: Option<EventSeries>,
    pub source: EventSource,
    pub reporting_component: Option<Str>,
    pub reporting_controller: Option<Str>,
    #[serde(rename = "type")]
    pub severity: Option<Str>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct EventMeta {
    pub uid: Str,
    pub creation_timestamp: Option<Str>,
}

/// The object an Event is about.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct EventObject {
    pub kind: Str,
    pub namespace: Str,
    pub name: Str,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct EventSeries {
    #[serde(deserialize_with = "lenient_int")]
    pub count: Option<i64>,
    pub last_observed_time: Option<Str>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct EventSource {
    pub component: Option<Str>,
}

impl EventView {
    /// The object it is about, whichever version wrote it.
    pub fn about(&self) -> &EventObject {
        if self.involved_object.kind.is_empty() {
            &self.regarding
        } else {
            &self.involved_object
        }
    }

    /// The namespace of the object it is about: its own, or, when the Event leaves it out,
    /// `listed_in`, the namespace the Event was listed in.
    pub fn about_namespace<'a>(&'a self, listed_in: &'a str) -> &'a str {
        let ns = self.about().namespace.as_str();
        if ns.is_empty() { listed_in } else { ns }
    }

    /// Its text (`message`, or `note`).
    pub fn text(&self) -> &str {
        self.message
            .as_deref()
            .or(self.note.as_deref())
            .unwrap_or_default()
    }

    /// When it first and last happened, how many times, and whether the first time is finer
    /// than a second (`eventTime`, microseconds): a series of repeats is one Event with a
    /// count, whose first and last times are the only ones known. `None` without a time.
    pub fn span(&self) -> Option<(rf_format::Timestamp, rf_format::Timestamp, u32, bool)> {
        let time = |t: &Option<Str>| t.as_deref().and_then(parse_rfc3339);
        let (first, exact) =
            match time(&self.first_timestamp).or_else(|| time(&self.deprecated_first_timestamp)) {
                Some(t) => (t, false),
                None => match time(&self.event_time) {
                    Some(t) => (t, true),
                    None => (time(&self.metadata.creation_timestamp)?, false),
                },
            };
        let last = time(&self.last_timestamp)
            .or_else(|| time(&self.deprecated_last_timestamp))
            .or_else(|| {
                self.series
                    .as_ref()
                    .and_then(|s| time(&s.last_observed_time))
            })
            .unwrap_or(first)
            .max(first);
        let count = self
            .count
            .or(self.deprecated_count)
            .or_else(|| self.series.as_ref().and_then(|s| s.count))
            .unwrap_or(1)
            .clamp(1, i64::from(u32::MAX));
        Some((first, last, u32::try_from(count).unwrap_or(u32::MAX), exact))
    }
}
