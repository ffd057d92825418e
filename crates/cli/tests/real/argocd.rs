//! The real Argo CD of `tests/cluster/up.sh` (its application controller and repo server): git
//! repositories on disk that it reads as `file://` URLs, a Helm chart of the canary the tests
//! release, and Applications that render it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use super::{Cluster, until};
use crate::common::{run_bounded, text};

impl Cluster {
    /// Where up.sh put Argo CD's binaries; the test fails when it started none (it was run with
    /// `RF_CLUSTER_ARGOCD=0`, or in scale mode).
    pub fn argocd(&self) -> PathBuf {
        let file = self.dir.join("argocd-bin");
        PathBuf::from(
            std::fs::read_to_string(&file)
                .unwrap_or_else(|e| {
                    panic!(
                        "{}: {e}: this test needs the cluster's Argo CD (up.sh starts it unless \
                         RF_CLUSTER_ARGOCD=0)",
                        file.display()
                    )
                })
                .trim(),
        )
    }

    /// The Application `name` of namespace `ns`, as Argo CD last wrote it.
    pub fn application(&self, ns: &str, name: &str) -> Value {
        self.get(ns, &format!("applications.argoproj.io/{name}"))
            .unwrap_or_else(|| panic!("no Application {ns}/{name}"))
    }

    /// Waits until the Application `name` satisfies `f`, saying `what` it waited for.
    pub fn wait_app(&self, ns: &str, name: &str, what: &str, f: impl Fn(&Value) -> bool) -> Value {
        until(
            &format!("Application {ns}/{name}: {what}"),
            super::SETTLE,
            || {
                let app = self.get(ns, &format!("applications.argoproj.io/{name}"))?;
                f(&app).then_some(app)
            },
            || {
                let app = self.get(ns, &format!("applications.argoproj.io/{name}"));
                let log =
                    std::fs::read_to_string(self.dir.join("argocd-application-controller.log"))
                        .unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(12).collect();
                format!(
                    "status {}\nthe controller's last lines:\n{}",
                    app.map_or(Value::Null, |a| a["status"].clone()),
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                )
            },
        )
    }
}

/// The number of syncs the Application's `status.history` holds.
pub fn syncs(app: &Value) -> usize {
    app["status"]["history"].as_array().map_or(0, Vec::len)
}

/// A git repository on disk, read by Argo CD's repo server as `file://`.
pub struct GitRepo {
    pub dir: PathBuf,
}

impl GitRepo {
    /// A new repository `name` under `parent`, on branch main.
    pub fn new(parent: &Path, name: &str) -> GitRepo {
        let dir = parent.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let repo = GitRepo { dir };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    /// Its URL for an Application's `repoURL`.
    pub fn url(&self) -> String {
        format!("file://{}", self.dir.display())
    }

    fn git(&self, args: &[&str]) -> String {
        let mut c = Command::new("git");
        c.arg("-C")
            .arg(&self.dir)
            .args([
                "-c",
                "user.name=pipeline",
                "-c",
                "user.email=pipeline@example.com",
            ])
            .args(args);
        let o = run_bounded(c);
        assert!(
            o.status.success(),
            "git {args:?}: {}{}",
            text(&o.stdout),
            text(&o.stderr)
        );
        text(&o.stdout)
    }

    /// Writes `files` (path, content) and commits them with `message`; the new commit's SHA.
    pub fn commit<V: AsRef<str>>(&self, files: &[(&str, V)], message: &str) -> String {
        for (path, content) in files {
            let to = self.dir.join(path);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::write(&to, content.as_ref()).unwrap();
        }
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", message]);
        self.git(&["rev-parse", "HEAD"]).trim().to_owned()
    }
}

/// The chart of the canary `checkout-api`: a ConfigMap of `.Values.config`, the Service, and
/// the Rollout whose pod template carries the ConfigMap's checksum (the usual Helm idiom) and
/// the image `.Values.image.tag` pinned by `.Values.image.digest`. `steps` are its canary's.
pub fn chart(steps: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "checkout-api/Chart.yaml",
            "apiVersion: v2\nname: checkout-api\nversion: 1.0.0\n".to_owned(),
        ),
        (
            "checkout-api/values.yaml",
            "image: {repository: registry.example/checkout-api, tag: \"1.0\", digest: \"\"}\n\
             config: {}\nreplicas: 4\n"
                .to_owned(),
        ),
        (
            "checkout-api/templates/configmap.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: checkout-api-config}\n\
             data:\n{{ toYaml .Values.config | indent 2 }}\n"
                .to_owned(),
        ),
        (
            "checkout-api/templates/service.yaml",
            "apiVersion: v1\nkind: Service\nmetadata: {name: checkout-api}\nspec:\n  \
             selector: {app: checkout-api}\n  ports: [{port: 80, targetPort: 8080}]\n"
                .to_owned(),
        ),
        (
            "checkout-api/templates/rollout.yaml",
            format!(
                r#"apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {{name: checkout-api}}
spec:
  replicas: {{{{ .Values.replicas }}}}
  revisionHistoryLimit: 3
  selector: {{matchLabels: {{app: checkout-api}}}}
  template:
    metadata:
      labels: {{app: checkout-api}}
      annotations:
        checksum/config: {{{{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}}}
    spec:
      containers:
      - name: app
        image: "{{{{ .Values.image.repository }}}}:{{{{ .Values.image.tag }}}}{{{{ with .Values.image.digest }}}}@{{{{ . }}}}{{{{ end }}}}"
        envFrom: [{{configMapRef: {{name: checkout-api-config}}}}]
  strategy:
    canary:
      steps: {steps}
"#
            ),
        ),
    ]
}

/// A Service `name` of port 80 to the pods' 8080, selecting `selector` (a YAML flow mapping).
fn service(name: &str, selector: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: {name}}}\nspec:\n  \
         selector: {selector}\n  ports: [{{port: 80, targetPort: 8080}}]\n"
    )
}

/// Seed 002's front door as a chart, `shop`: the blue-green Rollout `checkout-api` (its pods
/// labelled `version: .Values.version`, the old revision kept `scaleDownDelaySeconds: 600`
/// after promotion), its activeService `checkout-api`, a Service `checkout-api-legacy`
/// selecting `version: .Values.legacyVersion` (pinned by an environment's values file), and
/// the Ingress `shop` sending `shop.example.com/` to the legacy one.
pub fn front_door_chart() -> Vec<(&'static str, String)> {
    vec![
        (
            "shop/Chart.yaml",
            "apiVersion: v2\nname: shop\nversion: 1.0.0\n".to_owned(),
        ),
        (
            "shop/values.yaml",
            "image: {repository: registry.example/checkout-api, tag: \"1.0\", digest: \"\"}\n\
             version: v1\nlegacyVersion: v1\nreplicas: 3\n"
                .to_owned(),
        ),
        (
            "shop/templates/service.yaml",
            service("checkout-api", "{app: checkout-api}"),
        ),
        (
            "shop/templates/legacy-service.yaml",
            service(
                "checkout-api-legacy",
                "{app: checkout-api, version: \"{{ .Values.legacyVersion }}\"}",
            ),
        ),
        (
            "shop/templates/ingress.yaml",
            r#"apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop}
spec:
  ingressClassName: nginx
  rules:
  - host: shop.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend: {service: {name: checkout-api-legacy, port: {number: 80}}}
"#
            .to_owned(),
        ),
        (
            "shop/templates/rollout.yaml",
            r#"apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: checkout-api}
spec:
  replicas: {{ .Values.replicas }}
  revisionHistoryLimit: 3
  selector: {matchLabels: {app: checkout-api}}
  template:
    metadata:
      labels: {app: checkout-api, version: "{{ .Values.version }}"}
    spec:
      containers:
      - name: app
        image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}{{ with .Values.image.digest }}@{{ . }}{{ end }}"
  strategy:
    blueGreen:
      activeService: checkout-api
      scaleDownDelaySeconds: 600
"#
            .to_owned(),
        ),
    ]
}

/// A chart `pinned` of the canary `checkout-api` with its stableService `checkout-api` and
/// canaryService `checkout-api-canary`; with `hash`, the stableService's selector in Git also
/// pins `rollouts-pod-template-hash` (a Service exported from the cluster into the chart), the
/// key the Argo Rollouts controller writes at each promotion.
pub fn pinned_chart(hash: Option<&str>) -> Vec<(&'static str, String)> {
    let pin = hash
        .map(|h| format!(", rollouts-pod-template-hash: \"{h}\""))
        .unwrap_or_default();
    vec![
        (
            "pinned/Chart.yaml",
            "apiVersion: v2\nname: pinned\nversion: 1.0.0\n".to_owned(),
        ),
        (
            "pinned/values.yaml",
            "image: {repository: registry.example/checkout-api, tag: \"1.0\", digest: \"\"}\n"
                .to_owned(),
        ),
        (
            "pinned/templates/service.yaml",
            service("checkout-api", &format!("{{app: checkout-api{pin}}}")),
        ),
        (
            "pinned/templates/canary-service.yaml",
            service("checkout-api-canary", "{app: checkout-api}"),
        ),
        (
            "pinned/templates/rollout.yaml",
            r#"apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: checkout-api}
spec:
  replicas: 3
  revisionHistoryLimit: 3
  selector: {matchLabels: {app: checkout-api}}
  template:
    metadata:
      labels: {app: checkout-api}
    spec:
      containers:
      - name: app
        image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}{{ with .Values.image.digest }}@{{ . }}{{ end }}"
  strategy:
    canary:
      stableService: checkout-api
      canaryService: checkout-api-canary
      steps: [{setWeight: 50}, {pause: {duration: 5s}}]
"#
            .to_owned(),
        ),
    ]
}

/// The digest of build `n` of the image (so `image-not-pinned` stays out of the way).
pub fn digest(n: u8) -> String {
    format!("sha256:{}", format!("{n:02x}").repeat(32))
}

/// A multi-source Application `name` in `ns`, deploying to `ns` with automated sync (self-heal
/// when `self_heal`): the chart at `path` of `charts` with `parameters` inline (the image tag
/// and digest of a pipeline), and its values file `path/values.yaml` from `values`
/// (`ref: values`).
pub fn application<V: AsRef<str>>(
    ns: &str,
    name: &str,
    (charts, path): (&GitRepo, &str),
    values: &GitRepo,
    parameters: &[(&str, V)],
    self_heal: bool,
) -> String {
    format!(
        r#"apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {{name: {name}, namespace: {ns}}}
spec:
  project: default
  destination: {{server: "https://kubernetes.default.svc", namespace: {ns}}}
  sources:
  - repoURL: "{charts}"
    targetRevision: main
    path: {path}
    helm:
      valueFiles: [$values/{path}/values.yaml]
      parameters: {parameters}
  - repoURL: "{values}"
    targetRevision: main
    ref: values
  syncPolicy:
    automated: {{prune: true, selfHeal: {self_heal}}}
"#,
        charts = charts.url(),
        values = values.url(),
        parameters = parameters_json(parameters),
    )
}

/// Helm parameters as an Application's `helm.parameters` (JSON, which is YAML too).
fn parameters_json<V: AsRef<str>>(parameters: &[(&str, V)]) -> serde_json::Value {
    parameters
        .iter()
        .map(|(name, value)| serde_json::json!({"name": name, "value": value.as_ref()}))
        .collect()
}

/// The pipeline's move: new inline parameters written into the Application's first source (as
/// `argocd app set -p` writes them), applied at once.
pub fn set_parameters<V: AsRef<str>>(c: &Cluster, ns: &str, name: &str, parameters: &[(&str, V)]) {
    let patch = serde_json::json!([
        {"op": "replace", "path": "/spec/sources/0/helm/parameters",
         "value": parameters_json(parameters)}
    ])
    .to_string();
    c.ok(
        &[
            "-n",
            ns,
            "patch",
            "applications.argoproj.io",
            name,
            "--type",
            "json",
            "--field-manager",
            "pipeline",
            "-p",
            &patch,
        ],
        None,
    );
}

/// The parameters of build `n` of the image: its tag `1.n` and digest.
pub fn image_parameters(n: u8) -> [(&'static str, String); 2] {
    [("image.tag", format!("1.{n}")), ("image.digest", digest(n))]
}

/// `helm template release` of the chart `path` of `files`, with the values files `values` and
/// `--set`s, by the helm of up.sh (the one Argo CD's repo server runs).
pub fn helm_template<V: AsRef<str>>(
    c: &Cluster,
    files: &[(&str, V)],
    path: &str,
    values: &[&str],
    sets: &[&str],
) -> String {
    helm_template_in(c, None, files, path, values, sets)
}

/// [`helm_template`] with `--namespace ns` when `ns` is given (the release's namespace, as
/// Argo CD passes its destination's).
pub fn helm_template_in<V: AsRef<str>>(
    c: &Cluster,
    ns: Option<&str>,
    files: &[(&str, V)],
    path: &str,
    values: &[&str],
    sets: &[&str],
) -> String {
    let dir = tempfile::tempdir().unwrap();
    for (p, content) in files {
        let to = dir.path().join(p);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(&to, content.as_ref()).unwrap();
    }
    let mut helm = Command::new(c.argocd().join("helm"));
    helm.arg("template")
        .arg("release")
        .arg(dir.path().join(path));
    if let Some(ns) = ns {
        helm.args(["--namespace", ns]);
    }
    for (i, v) in values.iter().enumerate() {
        let file = dir.path().join(format!("values-{i}.yaml"));
        std::fs::write(&file, v).unwrap();
        helm.arg("-f").arg(file);
    }
    for s in sets {
        helm.args(["--set", s]);
    }
    let o = run_bounded(helm);
    assert!(o.status.success(), "helm template: {}", text(&o.stderr));
    text(&o.stdout)
}

/// How long Argo CD takes at most to see a pushed commit: its reconciliation timeout (20 s in
/// up.sh, which is also how long the repo server trusts a resolved branch) and a sync.
pub const NEXT_REFRESH: Duration = Duration::from_secs(90);
