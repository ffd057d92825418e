//! `check deployment/NAME`: the same verdict for a plain Deployment. Its current revision is
//! its ReplicaSet of the highest `deployment.kubernetes.io/revision`; the Services that route to
//! it are those whose selector its pod template matches; each must hold a ready endpoint of a
//! pod of the current revision, and the rolling update must be complete.

use std::collections::BTreeMap;

use rf_format::{Kind, Record};
use serde::Serialize;
use serde_json::Value;

use super::{
    Expectations, RsState, ServiceState, State, applications, expectations, front_doors, objects,
    owner_names, string_values,
};

/// The label the Deployment controller puts on each ReplicaSet and its pods.
const POD_HASH_LABEL: &str = "pod-template-hash";
const REVISION: &str = "deployment.kubernetes.io/revision";

/// A Deployment's revision and counts, as its status reports them.
#[derive(Debug, Default, Serialize)]
pub(super) struct DeploymentState {
    /// The current revision's number (`kubectl rollout history`).
    pub revision: Option<i64>,
    pub replicas: i64,
    pub updated: i64,
    pub ready: i64,
    pub available: i64,
    /// Pods of any revision, old ones included.
    pub total: i64,
    /// The controller has not yet seen the latest spec.
    pub stale: bool,
}

fn int(v: &Value, p: &str) -> i64 {
    v.pointer(p).and_then(Value::as_i64).unwrap_or(0)
}

fn text<'a>(v: &'a Value, p: &str) -> Option<&'a str> {
    v.pointer(p).and_then(Value::as_str)
}

/// The Deployment `ns/name` in the snapshot and why adoption fails, if it does.
pub(super) fn describe(
    records: &[Record],
    ns: &str,
    name: &str,
    expect: &Expectations,
) -> Option<(State, Vec<String>)> {
    let deployment = objects(records, &rf_format::api::DEPLOYMENT.newest())
        .find(|d| text(d, "/metadata/name") == Some(name))?;
    let uid = text(&deployment, "/metadata/uid").unwrap_or_default();
    let mut state = State {
        kind: "Deployment",
        strategy: text(&deployment, "/spec/strategy/type")
            .unwrap_or("RollingUpdate")
            .to_owned(),
        ..State::default()
    };
    // Its ReplicaSets: owned by it (by uid when the snapshot has it, else by name).
    let mut revisions: Vec<(i64, Value)> = objects(records, &Kind::ReplicaSet)
        .filter(|rs| {
            rs.pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|os| {
                    os.iter().any(|o| {
                        text(o, "/kind") == Some("Deployment")
                            && text(o, "/name") == Some(name)
                            && (uid.is_empty() || text(o, "/uid").is_none_or(|u| u == uid))
                    })
                })
        })
        .map(|rs| {
            let revision = string_values(&rs, "/metadata/annotations")
                .get(REVISION)
                .and_then(|r| r.parse().ok())
                .unwrap_or(0);
            (revision, rs)
        })
        .collect();
    revisions.sort_by_key(|(r, _)| std::cmp::Reverse(*r));
    let hash_of = |rs: &Value| {
        string_values(rs, "/metadata/labels")
            .get(POD_HASH_LABEL)
            .cloned()
            .unwrap_or_default()
    };
    let current = revisions.first().map(|(_, rs)| hash_of(rs));
    let mut rs_labels = BTreeMap::new();
    for (i, (_, rs)) in revisions.iter().enumerate() {
        let hash = hash_of(rs);
        rs_labels.insert(
            hash.clone(),
            string_values(rs, "/spec/template/metadata/labels"),
        );
        state.replicasets.push(RsState {
            name: text(rs, "/metadata/name").unwrap_or_default().to_owned(),
            hash,
            role: if i == 0 { "new" } else { "old" },
            replicas: int(rs, "/spec/replicas"),
            ready: int(rs, "/status/readyReplicas"),
        });
    }
    state.current_pod_hash = current.clone();
    let replicas = deployment
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let d = DeploymentState {
        revision: revisions.first().map(|(r, _)| *r).filter(|r| *r > 0),
        replicas,
        updated: int(&deployment, "/status/updatedReplicas"),
        ready: int(&deployment, "/status/readyReplicas"),
        available: int(&deployment, "/status/availableReplicas"),
        total: int(&deployment, "/status/replicas"),
        stale: int(&deployment, "/status/observedGeneration")
            < int(&deployment, "/metadata/generation"),
    };
    state.phase = deployment
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| text(c, "/type") == Some("Progressing")))
        .and_then(|c| text(c, "/reason"))
        .map(str::to_owned);

    // Which revision each pod of the Deployment is (by its ReplicaSet).
    let pod_hash: BTreeMap<String, String> = objects(records, &Kind::Pod)
        .filter_map(|p| {
            let rs = owner_names(&p).find_map(|o| {
                state
                    .replicasets
                    .iter()
                    .find(|r| r.name == o)
                    .map(|r| r.hash.clone())
            })?;
            Some((text(&p, "/metadata/name")?.to_owned(), rs))
        })
        .collect();
    let template = string_values(&deployment, "/spec/template/metadata/labels");
    for svc in objects(records, &Kind::Service) {
        let selector = string_values(&svc, "/spec/selector");
        if selector.is_empty() || selector.iter().any(|(k, v)| template.get(k) != Some(v)) {
            continue;
        }
        let service = text(&svc, "/metadata/name").unwrap_or_default().to_owned();
        let mut endpoints: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for slice in objects(records, &Kind::EndpointSlice).filter(|s| {
            string_values(s, "/metadata/labels")
                .get("kubernetes.io/service-name")
                .is_some_and(|n| *n == service)
        }) {
            for e in slice
                .get("endpoints")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                // An endpoint's `ready` left out means ready (discovery.k8s.io/v1).
                if e.pointer("/conditions/ready").and_then(Value::as_bool) == Some(false)
                    || text(e, "/targetRef/kind") != Some("Pod")
                {
                    continue;
                }
                let pod = text(e, "/targetRef/name").unwrap_or_default().to_owned();
                let hash = pod_hash.get(&pod).cloned().unwrap_or_default();
                endpoints.entry(hash).or_default().push(pod);
            }
        }
        for pods in endpoints.values_mut() {
            pods.sort();
            pods.dedup();
        }
        state.services.push(ServiceState {
            name: service,
            role: None,
            selector,
            endpoints,
        });
    }
    state.front_doors = front_doors(records, &state.services);
    state.applications = applications(records, "Deployment", ns, name);

    let mut failures = Vec::new();
    let listed = |k: &Kind| {
        records
            .iter()
            .any(|r| r.kind == *k && r.op == rf_format::Op::ListEnd)
    };
    let current = current.unwrap_or_default();
    if current.is_empty() {
        failures.push(format!(
            "Deployment {ns}/{name} has no ReplicaSet in the snapshot: no revision to verify"
        ));
    }
    if d.stale {
        failures.push(format!(
            "the Deployment controller has not yet seen the latest spec of {ns}/{name} (observedGeneration behind generation)"
        ));
    } else if d.updated < replicas || d.total > d.updated || d.available < d.updated {
        failures.push(format!(
            "Deployment {ns}/{name} has not finished rolling out{}: {} of {replicas} pod(s) updated, {} available, {} in all",
            d.revision.map(|r| format!(" revision {r}")).unwrap_or_default(),
            d.updated,
            d.available,
            d.total
        ));
    }
    if !listed(&Kind::Service) || !listed(&Kind::EndpointSlice) {
        failures.push(
            "cannot verify adoption: Services or EndpointSlices could not be listed".to_owned(),
        );
    } else if state.services.is_empty() {
        failures.push(format!(
            "no Service routes to {ns}/{name}: none selects its pods"
        ));
    }
    for s in &state.services {
        if s.endpoints.get(&current).is_none_or(Vec::is_empty) {
            failures.push(format!(
                "Service {} has no ready endpoint of the current revision {current} of {ns}/{name}",
                s.name
            ));
        }
    }
    state.deployment = Some(d);
    expectations(records, &mut state, &rs_labels, expect, &mut failures);
    Some((state, failures))
}
