//! The Flux HelmRelease that installs the Rollout: every render is one Helm upgrade by
//! helm-controller. Its status says what it attempts (chart version and values digest) as the
//! upgrade starts, then, once done, the new Helm release in `status.history`: newest first,
//! each dated by its `lastDeployed` (`firstDeployed` is the release name's first install),
//! cut as the controller cuts it, to the latest and the previous deployed one.

use rf_format::Op;
use serde_json::{Value, json};

use crate::calendar::rfc3339;
use crate::hash::{fake_sha256, uid};
use crate::objects::{ManagedField, Meta, manager};
use crate::sim::Sim;

/// Where the HelmReleases live.
pub(crate) const FLUX_NAMESPACE: &str = "flux-system";
/// The labels helm-controller puts on what a release installs.
pub(crate) const NAME_LABEL: &str = "helm.toolkit.fluxcd.io/name";
pub(crate) const NAMESPACE_LABEL: &str = "helm.toolkit.fluxcd.io/namespace";
const API: &str = "helm.toolkit.fluxcd.io/v2";

/// One Helm release of the HelmRelease, as `status.history` holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Release {
    pub version: i64,
    pub chart: String,
    pub config_digest: String,
    pub deployed: i64,
    /// `deployed` for the latest, `superseded` for those before.
    pub status: &'static str,
}

/// A `helm.toolkit.fluxcd.io/v2` HelmRelease.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HelmRelease {
    pub meta: Meta,
    pub app: String,
    /// The namespace it installs into.
    pub target: String,
    /// The chart version its spec asks for.
    pub chart: String,
    pub first_deployed: i64,
    /// Oldest first; the status prints it newest first.
    pub history: Vec<Release>,
    /// What the last upgrade attempted: chart version and values digest.
    pub attempted: (String, String),
    /// The upgrade that runs, when one does.
    pub upgrading: bool,
}

impl HelmRelease {
    pub(crate) fn to_value(&self) -> Value {
        let latest = self.history.last();
        let (ready, reason, message) = match (self.upgrading, latest) {
            (true, _) => (
                "Unknown",
                "Progressing",
                "Running 'upgrade' action with timeout of 5m0s".to_owned(),
            ),
            (false, Some(r)) => (
                "True",
                "UpgradeSucceeded",
                format!(
                    "Helm upgrade succeeded for release {}/{}.v{} with chart {}@{}",
                    self.target, self.app, r.version, self.app, r.chart
                ),
            ),
            (false, None) => ("False", "InstallFailed", "no release".to_owned()),
        };
        let history: Vec<Value> = self
            .history
            .iter()
            .rev()
            .map(|r| {
                json!({
                    "chartName": self.app,
                    "chartVersion": r.chart,
                    "configDigest": r.config_digest,
                    "digest": format!("sha256:{}", fake_sha256(&format!("{}/release/{}", self.app, r.version))),
                    "firstDeployed": rfc3339(self.first_deployed),
                    "lastDeployed": rfc3339(r.deployed),
                    "name": self.app,
                    "namespace": self.target,
                    "status": r.status,
                    "version": r.version,
                })
            })
            .collect();
        let generation = self.meta.generation.unwrap_or(1);
        json!({
            "apiVersion": API,
            "kind": "HelmRelease",
            "metadata": self.meta.to_value(),
            "spec": {
                "interval": "10m",
                "releaseName": self.app,
                "targetNamespace": self.target,
                "chart": {"spec": {
                    "chart": self.app,
                    "version": self.chart,
                    "sourceRef": {"kind": "HelmRepository", "name": "charts"},
                }},
                "valuesFrom": [{"kind": "ConfigMap", "name": format!("{}-values", self.app)}],
            },
            "status": {
                "observedGeneration": generation,
                "lastAttemptedGeneration": generation,
                "lastAttemptedReleaseAction": "upgrade",
                "lastAttemptedRevision": self.attempted.0,
                "lastAttemptedConfigDigest": self.attempted.1,
                "helmChart": format!("{FLUX_NAMESPACE}/{FLUX_NAMESPACE}-{}", self.app),
                "storageNamespace": self.target,
                "history": history,
                "conditions": [{
                    "type": "Ready",
                    "status": ready,
                    "reason": reason,
                    "message": message,
                    "observedGeneration": generation,
                }],
            },
        })
    }
}

/// The digest of the values a render gives the chart: what differs between two renders of the
/// same chart (the image and the config checksum the values carry).
fn values_digest(template: &Value) -> String {
    let checksum = template["metadata"]["annotations"]["checksum/config"]
        .as_str()
        .unwrap_or_default();
    let images = crate::argocd::template_images(template).join(",");
    format!(
        "sha256:{}",
        fake_sha256(&format!("values/{images}/{checksum}"))
    )
}

impl Sim {
    /// The HelmRelease as it stood before the recording: installed 11 days ago, upgraded to
    /// the stable revision at `released`.
    pub(crate) fn seed_helm_release(&mut self, created: i64, released: i64) {
        let app = self.config.app.clone();
        let mut meta = Meta::new(
            app.clone(),
            FLUX_NAMESPACE.to_owned(),
            uid(&format!("{FLUX_NAMESPACE}/{app}/helmrelease/{created}")),
            created - 30,
        );
        meta.generation = Some(4);
        meta.finalizers = vec!["finalizers.fluxcd.io"];
        meta.touch(ManagedField {
            manager: manager::HELM_CONTROLLER,
            operation: "Update",
            subresource: Some("status"),
            api_version: API,
            time: released,
            fields: json!({"f:status": {}}),
        });
        let digest = values_digest(&self.rollout.template);
        let chart = self.config.chart.clone();
        self.helm_release = Some(HelmRelease {
            meta,
            app,
            target: self.config.namespace.clone(),
            chart: chart.clone(),
            first_deployed: created,
            history: vec![
                Release {
                    version: 1,
                    chart: chart.clone(),
                    config_digest: format!("sha256:{}", fake_sha256("values/first")),
                    deployed: created,
                    status: "superseded",
                },
                Release {
                    version: 2,
                    chart: chart.clone(),
                    config_digest: digest.clone(),
                    deployed: released,
                    status: "deployed",
                },
            ],
            attempted: (chart, digest),
            upgrading: false,
        });
    }

    /// A new chart version in the HelmRelease's spec (a commit Flux picks up): the next render
    /// upgrades to it.
    pub fn bump_chart(&mut self, version: &str) {
        if let Some(hr) = self.helm_release.as_mut() {
            hr.chart = version.to_owned();
            hr.meta.generation = Some(hr.meta.generation.unwrap_or(1) + 1);
        }
    }

    /// helm-controller starts an upgrade of the template about to be applied.
    pub(crate) fn helm_upgrade_started(&mut self, template: &Value) {
        let digest = values_digest(template);
        let Some(hr) = self.helm_release.as_mut() else {
            return;
        };
        hr.attempted = (hr.chart.clone(), digest);
        hr.upgrading = true;
        self.write_helm_release();
    }

    /// The upgrade applied the manifests: a new Helm release, deployed; the one before it
    /// superseded; the history cut to those two.
    pub(crate) fn helm_upgrade_finished(&mut self) {
        let now = self.now;
        let Some(hr) = self.helm_release.as_mut() else {
            return;
        };
        let version = hr.history.last().map_or(0, |r| r.version) + 1;
        for r in &mut hr.history {
            r.status = "superseded";
        }
        hr.history.push(Release {
            version,
            chart: hr.attempted.0.clone(),
            config_digest: hr.attempted.1.clone(),
            deployed: now,
            status: "deployed",
        });
        let excess = hr.history.len().saturating_sub(2);
        hr.history.drain(..excess);
        hr.upgrading = false;
        self.write_helm_release();
    }

    fn write_helm_release(&mut self) {
        let now = self.now;
        let rv = self.bump_rv();
        let at = self.next_stamp();
        let Some(hr) = self.helm_release.as_mut() else {
            return;
        };
        hr.meta.resource_version = rv;
        hr.meta.touch(ManagedField {
            manager: manager::HELM_CONTROLLER,
            operation: "Update",
            subresource: Some("status"),
            api_version: API,
            time: now,
            fields: json!({"f:status": {}}),
        });
        let object = crate::json::to_bytes(&hr.to_value());
        let (ns, name, uid) = (
            hr.meta.namespace.clone(),
            hr.meta.name.clone(),
            hr.meta.uid.clone(),
        );
        self.push_in(
            ns,
            at,
            rf_format::api::HELM_RELEASE.newest(),
            Op::Modified,
            name,
            uid,
            rv.to_string(),
            object,
        );
    }
}
