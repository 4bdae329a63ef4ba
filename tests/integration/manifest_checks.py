"""Checks of the Kubernetes manifests and the Grafana dashboard, used by test_manifests.py:
rendering (kubectl kustomize), a field schema of the project's own and the API models of
python3-kubernetes, warmfs's command lines against its CLI, the semantic checks of the mount
DaemonSet, its consumers and the cache servers, and the dashboard's PromQL. Each check returns
a list of problems, empty when all is well, so the tests can also run it on broken copies.
"""

import json
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "packaging" / "kubernetes"
DASHBOARD = REPO / "packaging" / "grafana" / "warmfs-dashboard.json"
KUSTOMIZATIONS = ["", "node", "cache-server"]  # directories under packaging/kubernetes
EXAMPLES = ["examples/training-job.yaml"]
DEBIAN_PYTHON = "/usr/bin/python3"  # python3-kubernetes is installed for Debian's interpreter

# --- schema ------------------------------------------------------------------------------------
# For each object type, its allowed fields: None for a scalar or a free-form map (labels, data,
# resource quantities), "Type" for a nested object, ["Type"] for a list of them, [None] for a
# list of scalars. Type names are the Kubernetes API's (V1<Name> in python3-kubernetes).
# Only the fields these manifests use, and a few near them: add a field here when a manifest
# needs it, after checking the API reference.
SCHEMA = {
    "ObjectMeta": {"name": None, "namespace": None, "labels": None, "annotations": None},
    "Namespace": {"apiVersion": None, "kind": None, "metadata": "ObjectMeta"},
    "ServiceAccount": {"apiVersion": None, "kind": None, "metadata": "ObjectMeta",
                       "automountServiceAccountToken": None,
                       "imagePullSecrets": ["LocalObjectReference"]},
    "LocalObjectReference": {"name": None},
    "ConfigMap": {"apiVersion": None, "kind": None, "metadata": "ObjectMeta", "data": None,
                  "immutable": None},
    "Secret": {"apiVersion": None, "kind": None, "metadata": "ObjectMeta", "data": None,
               "stringData": None, "type": None, "immutable": None},
    "Service": {"apiVersion": None, "kind": None, "metadata": "ObjectMeta", "spec": "ServiceSpec"},
    "ServiceSpec": {"clusterIP": None, "publishNotReadyAddresses": None, "selector": None,
                    "ports": ["ServicePort"], "type": None},
    "ServicePort": {"name": None, "port": None, "targetPort": None, "protocol": None},
    "DaemonSet": {"apiVersion": None, "kind": None, "metadata": "ObjectMeta",
                  "spec": "DaemonSetSpec"},
    "DaemonSetSpec": {"selector": "LabelSelector", "template": "PodTemplateSpec",
                      "updateStrategy": "DaemonSetUpdateStrategy", "minReadySeconds": None,
                      "revisionHistoryLimit": None},
    "DaemonSetUpdateStrategy": {"type": None, "rollingUpdate": "RollingUpdateDaemonSet"},
    "RollingUpdateDaemonSet": {"maxUnavailable": None, "maxSurge": None},
    "StatefulSet": {"apiVersion": None, "kind": None, "metadata": "ObjectMeta",
                    "spec": "StatefulSetSpec"},
    "StatefulSetSpec": {"serviceName": None, "replicas": None, "podManagementPolicy": None,
                        "selector": "LabelSelector", "template": "PodTemplateSpec",
                        "volumeClaimTemplates": ["PersistentVolumeClaim"],
                        "updateStrategy": "StatefulSetUpdateStrategy"},
    "StatefulSetUpdateStrategy": {"type": None},
    "PersistentVolumeClaim": {"apiVersion": None, "kind": None, "metadata": "ObjectMeta",
                              "spec": "PersistentVolumeClaimSpec"},
    "PersistentVolumeClaimSpec": {"accessModes": [None], "storageClassName": None,
                                  "volumeMode": None, "resources": "ResourceRequirements"},
    "Job": {"apiVersion": None, "kind": None, "metadata": "ObjectMeta", "spec": "JobSpec"},
    "JobSpec": {"template": "PodTemplateSpec", "backoffLimit": None, "completions": None,
                "parallelism": None, "activeDeadlineSeconds": None,
                "ttlSecondsAfterFinished": None},
    "Pod": {"apiVersion": None, "kind": None, "metadata": "ObjectMeta", "spec": "PodSpec"},
    "LabelSelector": {"matchLabels": None},
    "PodTemplateSpec": {"metadata": "ObjectMeta", "spec": "PodSpec"},
    "PodSpec": {"serviceAccountName": None, "automountServiceAccountToken": None,
                "priorityClassName": None, "terminationGracePeriodSeconds": None,
                "restartPolicy": None, "nodeSelector": None, "tolerations": ["Toleration"],
                "affinity": "Affinity", "initContainers": ["Container"],
                "containers": ["Container"], "volumes": ["Volume"],
                "hostNetwork": None, "dnsPolicy": None},
    "Toleration": {"key": None, "operator": None, "value": None, "effect": None,
                   "tolerationSeconds": None},
    "Affinity": {"podAntiAffinity": "PodAntiAffinity"},
    "PodAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["PodAffinityTerm"]},
    "PodAffinityTerm": {"topologyKey": None, "labelSelector": "LabelSelector"},
    "Container": {"name": None, "image": None, "imagePullPolicy": None, "command": [None],
                  "args": [None], "env": ["EnvVar"], "envFrom": ["EnvFromSource"],
                  "ports": ["ContainerPort"], "securityContext": "SecurityContext",
                  "resources": "ResourceRequirements", "readinessProbe": "Probe",
                  "livenessProbe": "Probe", "startupProbe": "Probe", "lifecycle": "Lifecycle",
                  "volumeMounts": ["VolumeMount"], "workingDir": None},
    "EnvVar": {"name": None, "value": None, "valueFrom": "EnvVarSource"},
    "EnvVarSource": {"configMapKeyRef": "ConfigMapKeySelector",
                     "secretKeyRef": "SecretKeySelector"},
    "ConfigMapKeySelector": {"name": None, "key": None, "optional": None},
    "SecretKeySelector": {"name": None, "key": None, "optional": None},
    "EnvFromSource": {"configMapRef": "ConfigMapEnvSource", "secretRef": "SecretEnvSource",
                      "prefix": None},
    "ConfigMapEnvSource": {"name": None, "optional": None},
    "SecretEnvSource": {"name": None, "optional": None},
    "ContainerPort": {"name": None, "containerPort": None, "protocol": None},
    "SecurityContext": {"privileged": None, "allowPrivilegeEscalation": None,
                        "readOnlyRootFilesystem": None, "capabilities": "Capabilities",
                        "runAsUser": None, "runAsNonRoot": None},
    "Capabilities": {"add": [None], "drop": [None]},
    "ResourceRequirements": {"requests": None, "limits": None},
    "Probe": {"exec": "ExecAction", "httpGet": "HTTPGetAction", "initialDelaySeconds": None,
              "periodSeconds": None, "timeoutSeconds": None, "failureThreshold": None,
              "successThreshold": None},
    "ExecAction": {"command": [None]},
    "HTTPGetAction": {"path": None, "port": None, "scheme": None},
    "Lifecycle": {"preStop": "LifecycleHandler"},
    "LifecycleHandler": {"exec": "ExecAction", "httpGet": "HTTPGetAction"},
    "VolumeMount": {"name": None, "mountPath": None, "readOnly": None,
                    "mountPropagation": None, "subPath": None},
    "Volume": {"name": None, "hostPath": "HostPathVolumeSource",
               "secret": "SecretVolumeSource", "configMap": "ConfigMapVolumeSource",
               "emptyDir": "EmptyDirVolumeSource",
               "persistentVolumeClaim": "PersistentVolumeClaimVolumeSource"},
    "HostPathVolumeSource": {"path": None, "type": None},
    "SecretVolumeSource": {"secretName": None, "defaultMode": None, "optional": None},
    "ConfigMapVolumeSource": {"name": None, "defaultMode": None, "optional": None},
    "EmptyDirVolumeSource": {"medium": None, "sizeLimit": None},
    "PersistentVolumeClaimVolumeSource": {"claimName": None, "readOnly": None},
}
KINDS = {("v1", "Namespace"), ("v1", "ServiceAccount"), ("v1", "ConfigMap"), ("v1", "Secret"),
         ("v1", "Service"), ("v1", "Pod"), ("apps/v1", "DaemonSet"),
         ("apps/v1", "StatefulSet"), ("batch/v1", "Job")}
ENUMS = {  # (type, field): allowed values
    ("VolumeMount", "mountPropagation"): {"None", "HostToContainer", "Bidirectional"},
    ("HostPathVolumeSource", "type"): {"", "DirectoryOrCreate", "Directory", "FileOrCreate",
                                       "File", "Socket", "CharDevice", "BlockDevice"},
    ("DaemonSetUpdateStrategy", "type"): {"RollingUpdate", "OnDelete"},
    ("StatefulSetSpec", "podManagementPolicy"): {"OrderedReady", "Parallel"},
    ("Toleration", "operator"): {"Exists", "Equal"},
    ("Toleration", "effect"): {"NoSchedule", "PreferNoSchedule", "NoExecute"},
    ("PodSpec", "restartPolicy"): {"Always", "OnFailure", "Never"},
    ("ContainerPort", "protocol"): {"TCP", "UDP", "SCTP"},
    ("ServicePort", "protocol"): {"TCP", "UDP", "SCTP"},
}
# Models of SCHEMA's types whose name changed since python3-kubernetes 22.6 (Kubernetes 1.22):
# the newer name first.
MODEL_ALIASES = {"LifecycleHandler": ["V1LifecycleHandler", "V1Handler"]}

# --- warmfs's metrics (docs/metrics.md): the only names the dashboard may use -----------------
COUNTERS_AND_GAUGES = {
    "warmfs_read_bytes_total", "warmfs_reads_total", "warmfs_reader_wait_seconds_total",
    "warmfs_bucket_requests_total", "warmfs_bucket_bytes_total", "warmfs_bucket_retries_total",
    "warmfs_bucket_errors_total", "warmfs_cache_used_bytes", "warmfs_cache_capacity_bytes",
    "warmfs_cache_evicted_bytes_total", "warmfs_uploads_in_flight",
    "warmfs_uploads_completed_total", "warmfs_upload_failures_total",
    "warmfs_credentials_expiry_timestamp_seconds", "warmfs_credentials_info",
    "warmfs_server_requests_total", "warmfs_build_info",
}
HISTOGRAMS = {"warmfs_read_latency_seconds", "warmfs_bucket_request_duration_seconds",
              "warmfs_server_request_duration_seconds"}
METRICS = COUNTERS_AND_GAUGES | {h + s for h in HISTOGRAMS for s in ("_bucket", "_sum", "_count")}


def require_tool(case, name, how):
    path = shutil.which(name)
    if path is None:
        case.fail(f"{name} is not installed ({how}); this check never skips")
    return path


# --- rendering -----------------------------------------------------------------------------------
def render(directory: Path) -> list:
    """`kubectl kustomize` of one kustomization of a copy of packaging/kubernetes, with a
    throwaway token where the cache servers' token file belongs."""
    with tempfile.TemporaryDirectory(prefix="warmfs-k8s-") as tmp:
        tree = Path(tmp) / "kubernetes"
        shutil.copytree(K8S, tree)
        (tree / "cache-server" / "token").write_text("test-token-not-a-secret\n")
        rel = directory.relative_to(K8S)
        run = subprocess.run(["kubectl", "kustomize", str(tree / rel)], capture_output=True,
                             text=True, timeout=60)
    if run.returncode != 0:
        raise AssertionError(f"kubectl kustomize {rel} failed:\n{run.stderr}")
    return [d for d in yaml.safe_load_all(run.stdout) if d]


def load_examples() -> list:
    docs = []
    for name in EXAMPLES:
        docs += [d for d in yaml.safe_load_all((K8S / name).read_text()) if d]
    return docs


# --- structural checks ---------------------------------------------------------------------------
def schema_problems(doc: dict) -> list:
    where = f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
    if (doc.get("apiVersion"), doc.get("kind")) not in KINDS:
        return [f"{where}: unknown apiVersion/kind {doc.get('apiVersion')}/{doc.get('kind')}"]
    problems = []

    def walk(obj, type_name, path):
        if not isinstance(obj, dict):
            problems.append(f"{where} {path}: expected an object ({type_name})")
            return
        fields = SCHEMA[type_name]
        for key, value in obj.items():
            if key not in fields:
                problems.append(f"{where} {path}.{key}: not a field of {type_name}")
                continue
            allowed = ENUMS.get((type_name, key))
            if allowed is not None and value not in allowed:
                problems.append(f"{where} {path}.{key}: {value!r} is not one of {sorted(allowed)}")
            child = fields[key]
            if isinstance(child, list):
                if not isinstance(value, list):
                    problems.append(f"{where} {path}.{key}: expected a list")
                elif child[0] is not None:
                    for i, item in enumerate(value):
                        walk(item, child[0], f"{path}.{key}[{i}]")
            elif child is not None:
                walk(value, child, f"{path}.{key}")

    walk(doc, doc["kind"], "")
    return problems


MODEL_CHECK = r"""
import json, re, sys
import kubernetes.client as k
req = json.load(sys.stdin)
aliases = req["aliases"]
problems = []

def model(name):
    for cand in aliases.get(name, ["V1" + name]):
        if hasattr(k, cand):
            return getattr(k, cand)
    return None

def walk(obj, cls, path):
    json_to_py = {v: p for p, v in cls.attribute_map.items()}
    for key, value in obj.items():
        if key not in json_to_py:
            problems.append(f"{path}.{key}: not a field of {cls.__name__}")
        else:
            check(value, cls.openapi_types[json_to_py[key]], f"{path}.{key}")

def check(value, t, path):
    m = re.fullmatch(r"list\[(.+)\]", t)
    if m:
        for i, item in enumerate(value if isinstance(value, list) else []):
            check(item, m.group(1), f"{path}[{i}]")
    elif hasattr(k, t) and isinstance(value, dict):
        walk(value, getattr(k, t), path)

for name, fields in req["schema"].items():
    cls = model(name)
    if cls is None:
        problems.append(f"SCHEMA type {name}: no such model")
        continue
    known = set(cls.attribute_map.values())
    for f in fields:
        if f not in known:
            problems.append(f"SCHEMA {name}.{f}: not a field of {cls.__name__}")
for doc in req["docs"]:
    cls = model(doc["kind"])
    where = f"{doc['kind']}/{doc.get('metadata', {}).get('name')}"
    if cls is None:
        problems.append(f"{where}: no model for kind")
    else:
        walk(doc, cls, where)
print(json.dumps(problems))
"""


def model_problems(case, docs: list, schema=SCHEMA) -> list:
    """Field names checked against python3-kubernetes's API models (Debian's python3)."""
    probe = subprocess.run([DEBIAN_PYTHON, "-c", "import kubernetes.client"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        case.fail("python3-kubernetes is not installed for /usr/bin/python3 (run "
                  f"tools/lib/install-deps.sh); this check never skips\n{probe.stderr[-400:]}")
    req = {"aliases": MODEL_ALIASES, "schema": {n: list(f) for n, f in schema.items()},
           "docs": docs}
    run = subprocess.run([DEBIAN_PYTHON, "-c", MODEL_CHECK], input=json.dumps(req),
                         capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        raise AssertionError(f"the model check failed to run:\n{run.stderr}")
    return json.loads(run.stdout)


# --- warmfs command lines ------------------------------------------------------------------------
def cli_options_from_source() -> dict:
    """{subcommand: {"options": {name: takes_value}, "positionals": n}} from
    src/cli/command_line.cc: each XCommand::register_options adds its subcommand
    (`app = parent.add_subcommand("name", ...)`) and its options (`app->add_option("...")`)."""
    text = (REPO / "src" / "cli" / "command_line.cc").read_text()
    spec = {}
    blocks = re.split(r"\nvoid \w+::register_options\(CLI::App& parent\) \{", text)[1:]
    for block in blocks:
        block = block.split("\n}\n", 1)[0]
        m = re.search(r'add_subcommand\(\s*"([\w-]+)"', block)
        if not m:
            continue
        sub = spec.setdefault(m.group(1), {"options": {"--help": False, "-h": False},
                                           "positionals": 0})
        for call, names in re.findall(r'app->(add_option|add_flag)\(\s*"([^"]+)"', block):
            dashed = [n for n in names.split(",") if n.startswith("-")]
            if not dashed:
                sub["positionals"] += 1
            for n in dashed:
                sub["options"][n] = call == "add_option"
    return spec


def cli_options_from_help(help_text: str) -> dict:
    """Options in CLI11's help (`  -f,--foreground`, `  --endpoint TEXT ...`): name -> takes a
    value (a type word such as TEXT or UINT follows it)."""
    options = {}
    for line in help_text.splitlines():
        m = re.match(r"\s+((?:-\w,)?--[\w-]+)(?:\s+([A-Z][A-Z:]*\b))?", line)
        if m:
            for n in m.group(1).split(","):
                options[n] = m.group(2) is not None
    return options


def cli_spec() -> dict:
    spec = cli_options_from_source()
    binary = REPO / "build" / "src" / "cli" / "warmfs"
    if binary.exists():  # the built binary's own help is the authority when there is one
        for sub in ("mount", "serve"):
            run = subprocess.run([str(binary), sub, "--help"], capture_output=True, text=True,
                                 timeout=30)
            options = cli_options_from_help(run.stdout)
            options.setdefault("--metrics-listen", True)
            spec[sub]["options"] = options
    return spec


def command_problems(argv: list, spec: dict) -> list:
    """Problems of one `warmfs SUB ...` command line, as CLI11 would see them."""
    if len(argv) < 2 or Path(argv[0]).name != "warmfs" or argv[1] not in spec:
        return [f"not a warmfs command line: {argv}"]
    sub, options = argv[1], spec[argv[1]]["options"]
    problems, seen, positionals, i = [], set(), 0, 2
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("-"):
            name, _, inline = arg.partition("=")
            if name not in options:
                problems.append(f"warmfs {sub} has no option {name}")
            elif name in seen and name != "--cache-server":
                problems.append(f"warmfs {sub}: {name} given twice")
            elif options[name] and not inline:
                if i + 1 >= len(argv) or argv[i + 1].startswith("--"):
                    problems.append(f"warmfs {sub}: {name} needs a value")
                else:
                    i += 1
            seen.add(name)
        else:
            positionals += 1
        i += 1
    if positionals != spec[sub]["positionals"]:
        problems.append(f"warmfs {sub} takes {spec[sub]['positionals']} arguments, "
                        f"not {positionals}: {argv}")
    return problems


def option(argv: list, name: str):
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def positionals(argv: list, spec: dict) -> list:
    options, out, i = spec[argv[1]]["options"], [], 2
    while i < len(argv):
        if argv[i].startswith("-"):
            i += 2 if options.get(argv[i]) and "=" not in argv[i] else 1
        else:
            out.append(argv[i])
            i += 1
    return out


def container_env(container: dict, docs: list) -> dict:
    env = {}
    for source in container.get("envFrom", []):
        ref = source.get("configMapRef")
        maps = [d for d in docs if d["kind"] == "ConfigMap" and ref
                and d["metadata"]["name"] == ref["name"]]
        for cm in maps:  # a missing one is reference_problems' to report
            env.update(cm.get("data", {}))
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = var["value"]
    return env


def warmfs_argv(container: dict, docs: list):
    """The warmfs command line a container runs: its command + args with $(VAR) expanded, or
    the `exec warmfs ...` line of a `/bin/sh -c` script with its ${VAR}s and ${VAR:-default}s
    expanded (the script's own NAME=value lines, then the container's environment). None when it runs no warmfs."""
    env = container_env(container, docs)
    argv = list(container.get("command", [])) + list(container.get("args", []))
    if argv[:2] == ["/bin/sh", "-c"] or argv[:2] == ["sh", "-c"]:
        script = argv[2].replace("\\\n", " ")
        for line in script.splitlines():
            m = re.fullmatch(r"\s*([A-Z_]+)=(\S+)\s*", line)
            if m:
                env.setdefault(m.group(1), m.group(2))
        line = next((ln for ln in script.splitlines() if ln.strip().startswith("exec warmfs ")),
                    None)
        if line is None:
            return None
        expanded = re.sub(r"\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)",
                          lambda m: env.get(m.group(1) or m.group(3), m.group(2) or ""), line)
        return shlex.split(expanded)[1:]
    if not argv or Path(argv[0]).name != "warmfs":
        return None
    return [re.sub(r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), a) for a in argv]


# --- sizes ---------------------------------------------------------------------------------------
def warmfs_size(text: str) -> int:
    """warmfs's sizes (src/common/sizes.cc): K, M, G, T are powers of 1024."""
    m = re.fullmatch(r"([\d.]+)\s*([KMGT]?)(?:I?B)?", text.upper())
    assert m, text
    return int(float(m.group(1)) * 1024 ** " KMGT".index(m.group(2) or " "))


def k8s_quantity(text) -> int:
    m = re.fullmatch(r"([\d.]+)(Ki|Mi|Gi|Ti|k|M|G|T)?", str(text))
    assert m, text
    mult = {None: 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3,
            "M": 10**6, "G": 10**9, "T": 10**12}[m.group(2)]
    return int(float(m.group(1)) * mult)


# --- semantic checks -----------------------------------------------------------------------------
def find(docs, kind, name):
    for d in docs:
        if d.get("kind") == kind and d["metadata"]["name"] == name:
            return d
    raise KeyError(f"{kind}/{name}")


def pod_spec(doc):
    spec = doc.get("spec", {})
    return spec if doc["kind"] == "Pod" else spec.get("template", {}).get("spec", {})


def workloads(docs):
    return [d for d in docs if d["kind"] in ("DaemonSet", "StatefulSet", "Job", "Pod")]


def reference_problems(docs: list) -> list:
    have = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]) for d in docs}
    problems = []

    def need(kind, ns, name, what):
        if (kind, ns, name) not in have:
            problems.append(f"{what} names {kind} {ns}/{name}, which no manifest defines")

    for w in workloads(docs):
        ns, what = w["metadata"].get("namespace"), f"{w['kind']}/{w['metadata']['name']}"
        spec = pod_spec(w)
        if "serviceAccountName" in spec:
            need("ServiceAccount", ns, spec["serviceAccountName"], what)
        pc = spec.get("priorityClassName")
        if pc and pc not in ("system-node-critical", "system-cluster-critical"):
            problems.append(f"{what} names PriorityClass {pc}, which no manifest defines")
        for c in spec.get("initContainers", []) + spec.get("containers", []):
            for source in c.get("envFrom", []):
                if "configMapRef" in source:
                    need("ConfigMap", ns, source["configMapRef"]["name"], what)
                if "secretRef" in source:
                    need("Secret", ns, source["secretRef"]["name"], what)
            for var in c.get("env", []):
                ref = var.get("valueFrom", {})
                if "configMapKeyRef" in ref:
                    need("ConfigMap", ns, ref["configMapKeyRef"]["name"], what)
                if "secretKeyRef" in ref:
                    need("Secret", ns, ref["secretKeyRef"]["name"], what)
        for v in spec.get("volumes", []):
            if "configMap" in v:
                need("ConfigMap", ns, v["configMap"]["name"], what)
            if "secret" in v:
                need("Secret", ns, v["secret"]["secretName"], what)
        if w["kind"] == "StatefulSet":
            need("Service", ns, w["spec"]["serviceName"], what)
    return problems


def mount_under(container: dict, path: str):
    """The volumeMount of `container` that holds `path`, the deepest one."""
    best = None
    for vm in container.get("volumeMounts", []):
        mp = vm["mountPath"].rstrip("/")
        if path == mp or path.startswith(mp + "/"):
            if best is None or len(mp) > len(best["mountPath"]):
                best = vm
    return best


def volume(spec: dict, name: str) -> dict:
    return next((v for v in spec.get("volumes", []) if v["name"] == name), {})


def mount_daemonset_problems(docs: list, spec_cli: dict) -> list:
    """The DaemonSet that runs `warmfs mount`: what FUSE in a pod needs, and the rest."""
    problems = []
    found = False
    for ds in (d for d in docs if d["kind"] == "DaemonSet"):
        spec = pod_spec(ds)
        for c in spec.get("containers", []):
            argv = warmfs_argv(c, docs)
            if not argv or argv[1] != "mount":
                continue
            found = True
            what = f"DaemonSet/{ds['metadata']['name']} container {c['name']}"
            problems += [f"{what}: {p}" for p in command_problems(argv, spec_cli)]
            if not c.get("securityContext", {}).get("privileged"):
                problems.append(f"{what}: not privileged (FUSE and Bidirectional need it)")
            fuse = mount_under(c, "/dev/fuse")
            hp = volume(spec, fuse["name"]).get("hostPath", {}) if fuse else {}
            if not fuse or fuse["mountPath"] != "/dev/fuse" or hp.get("path") != "/dev/fuse" \
                    or hp.get("type") != "CharDevice":
                problems.append(f"{what}: no hostPath /dev/fuse (CharDevice) at /dev/fuse")
            for flag in ("--foreground", "--allow-other"):
                if flag not in argv and not (flag == "--foreground" and "-f" in argv):
                    problems.append(f"{what}: no {flag}")
            args = positionals(argv, spec_cli)
            mountpoint = args[1] if len(args) == 2 else ""
            host = mount_under(c, mountpoint)
            if not host or host.get("mountPropagation") != "Bidirectional" \
                    or "hostPath" not in volume(spec, host["name"]):
                problems.append(f"{what}: the mountpoint {mountpoint} is not under a hostPath "
                                "volume mounted with mountPropagation: Bidirectional")
            cache_dir = option(argv, "--cache-dir")
            if cache_dir and not mount_under(c, cache_dir):
                problems.append(f"{what}: --cache-dir {cache_dir} is on the container's own "
                                "filesystem, not a volume")
            token = option(argv, "--token-file")
            tm = mount_under(c, token) if token else None
            if token and (not tm or "secret" not in volume(spec, tm["name"])):
                problems.append(f"{what}: --token-file {token} is not in a Secret volume")
            if option(argv, "--cache-server") and not token:
                problems.append(f"{what}: --cache-server without --token-file")
            # Memory: the daemon's resident set stays near --memory-cache-size + ~256 MiB.
            size = warmfs_size(option(argv, "--memory-cache-size") or "1G")
            res = c.get("resources", {})
            limit = res.get("limits", {}).get("memory")
            if limit is None or k8s_quantity(limit) < size + 256 * 2**20:
                problems.append(f"{what}: memory limit {limit} is below --memory-cache-size "
                                "+ 256Mi")
            if res.get("requests", {}).get("memory") != limit:
                problems.append(f"{what}: memory request != limit (the daemon holds its size)")
            # Ready when the mount answers; unmounted before SIGTERM.
            probe = " ".join(c.get("readinessProbe", {}).get("exec", {}).get("command", []))
            if not re.search(rf"(warmfs stats|stat) .*{re.escape(mountpoint)}", probe):
                problems.append(f"{what}: no readiness probe that reads {mountpoint}")
            pre = " ".join(c.get("lifecycle", {}).get("preStop", {}).get("exec", {})
                           .get("command", []))
            if "warmfs unmount" not in pre:
                problems.append(f"{what}: no preStop `warmfs unmount`")
            if spec.get("terminationGracePeriodSeconds", 30) < 120:
                problems.append(f"{what}: terminationGracePeriodSeconds under 120 s leaves "
                                "writers no time to finish their uploads")
            port = (option(argv, "--metrics-listen") or ":").rsplit(":", 1)[1]
            ann = ds["spec"]["template"].get("metadata", {}).get("annotations", {})
            if ann.get("prometheus.io/scrape") != "true" or ann.get("prometheus.io/port") != port:
                problems.append(f"{what}: Prometheus annotations do not name port {port}")
            if not any(str(p.get("containerPort")) == port for p in c.get("ports", [])):
                problems.append(f"{what}: no containerPort {port} for the metrics")
            # A stale mount is detached by an init container with the same Bidirectional view.
            init_ok = any("umount -l" in " ".join(i.get("command", []))
                          and i.get("securityContext", {}).get("privileged")
                          and (mount_under(i, mountpoint) or {}).get("mountPropagation")
                          == "Bidirectional" for i in spec.get("initContainers", []))
            if not init_ok:
                problems.append(f"{what}: no privileged init container that detaches a stale "
                                f"mount at {mountpoint} (umount -l, Bidirectional)")
            if not any(t.get("key") in ("nvidia.com/gpu", None) and t.get("operator") == "Exists"
                       for t in spec.get("tolerations", [])):
                problems.append(f"{what}: no toleration for GPU nodes (nvidia.com/gpu)")
    if not found:
        problems.append("no DaemonSet runs `warmfs mount`")
    return problems


def host_mount_dirs(docs: list) -> set:
    """Host directories under which the DaemonSet mounts warmfs (its Bidirectional hostPaths)."""
    dirs = set()
    for ds in (d for d in docs if d["kind"] == "DaemonSet"):
        spec = pod_spec(ds)
        for c in spec.get("containers", []):
            for vm in c.get("volumeMounts", []):
                if vm.get("mountPropagation") == "Bidirectional":
                    path = volume(spec, vm["name"]).get("hostPath", {}).get("path")
                    if path:
                        dirs.add(path.rstrip("/"))
    return dirs


def consumer_problems(docs: list, host_dirs: set) -> list:
    """Pods that read the host mount: HostToContainer and read-only, of the parent directory."""
    problems, found = [], False
    for w in (d for d in workloads(docs) if d["kind"] in ("Job", "Pod")):
        spec = pod_spec(w)
        for c in spec.get("initContainers", []) + spec.get("containers", []):
            for vm in c.get("volumeMounts", []):
                path = volume(spec, vm["name"]).get("hostPath", {}).get("path", "").rstrip("/")
                if not any(path == d or path.startswith(d + "/") for d in host_dirs):
                    continue
                found = True
                what = f"{w['kind']}/{w['metadata']['name']} container {c['name']}"
                if vm.get("mountPropagation") != "HostToContainer":
                    problems.append(f"{what}: mounts {path} without HostToContainer propagation")
                if vm.get("readOnly") is not True:
                    problems.append(f"{what}: mounts {path} writable")
                if path not in host_dirs:
                    problems.append(f"{what}: mounts {path}, below the directory warmfs mounts "
                                    "in; a restarted warmfs would not show up there")
    if not found:
        problems.append("no job or pod reads the warmfs host mount")
    return problems


def cache_server_problems(docs: list, spec_cli: dict) -> list:
    """`warmfs serve` StatefulSets, their headless Service, and the mounts' --cache-server."""
    problems, urls_expected = [], set()
    for ss in (d for d in docs if d["kind"] == "StatefulSet"):
        spec = pod_spec(ss)
        for c in spec.get("containers", []):
            argv = warmfs_argv(c, docs)
            if not argv or argv[1] != "serve":
                continue
            what = f"StatefulSet/{ss['metadata']['name']}"
            problems += [f"{what}: {p}" for p in command_problems(argv, spec_cli)]
            token = option(argv, "--token-file")
            tm = mount_under(c, token) if token else None
            if not token or not tm or "secret" not in volume(spec, tm["name"]):
                problems.append(f"{what}: --token-file is not in a Secret volume")
            elif volume(spec, tm["name"])["secret"].get("defaultMode", 0o644) & 0o077:
                problems.append(f"{what}: the token file is readable by others (warmfs warns)")
            cache_dir = option(argv, "--cache-dir") or ""
            cm = mount_under(c, cache_dir)
            claims = {t["metadata"]["name"] for t in ss["spec"].get("volumeClaimTemplates", [])}
            if not cm or cm["name"] not in claims:
                problems.append(f"{what}: --cache-dir {cache_dir} is not on a volumeClaimTemplate")
            port = (option(argv, "--listen") or ":7070").rsplit(":", 1)[1]
            try:
                svc = find(docs, "Service", ss["spec"]["serviceName"])
            except KeyError:
                continue  # reported by reference_problems
            if svc["spec"].get("clusterIP") != "None":
                problems.append(f"{what}: Service {svc['metadata']['name']} is not headless")
            if not set(svc["spec"].get("selector", {}).items()) <= \
                    set(ss["spec"]["template"]["metadata"].get("labels", {}).items()):
                problems.append(f"{what}: Service {svc['metadata']['name']} does not select it")
            if not any(str(p["port"]) == port for p in svc["spec"].get("ports", [])):
                problems.append(f"{what}: Service has no port {port} (--listen)")
            for i in range(ss["spec"].get("replicas", 1)):
                urls_expected.add(f"http://{ss['metadata']['name']}-{i}."
                                  f"{svc['metadata']['name']}:{port}")
    for ds in (d for d in docs if d["kind"] == "DaemonSet"):
        for c in pod_spec(ds).get("containers", []):
            argv = warmfs_argv(c, docs)
            listed = set((option(argv or [], "--cache-server") or "").split(",")) - {""}
            if urls_expected and listed != urls_expected:
                problems.append(f"DaemonSet/{ds['metadata']['name']}: --cache-server lists "
                                f"{sorted(listed)}, the servers are {sorted(urls_expected)}")
            if listed and not urls_expected:
                problems.append(f"DaemonSet/{ds['metadata']['name']}: --cache-server without "
                                "cache servers in the manifests")
    return problems


# --- dashboard ----------------------------------------------------------------------------------
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool",
                "offset", "and", "or", "unless", "inf", "nan", "le", "start", "end"}


def dashboard_exprs(dashboard: dict) -> list:
    exprs = []

    def panels(items):
        for p in items:
            yield p
            yield from panels(p.get("panels", []))

    for p in panels(dashboard.get("panels", [])):
        for t in p.get("targets", []):
            if t.get("expr"):
                exprs.append((p.get("title", "?"), t["expr"]))
    return exprs


def metric_names(expr: str) -> set:
    """Metric names of a PromQL expression: identifiers that are not functions, keywords,
    label names (in {...}, by (...), on (...)) or durations."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # label values
    s = re.sub(r"\$\{?\w+\}?", "", s)  # Grafana variables
    s = re.sub(r"\{[^}]*\}", "", s)  # label matchers
    s = re.sub(r"\[[^\]]*\]", "", s)  # ranges, subqueries
    s = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", s)
    names = set()
    for m in re.finditer(r"(?<![\w.])([a-zA-Z_:][\w:]*)(\s*\()?", s):
        if m.group(2) or m.group(1).lower() in PROMQL_WORDS:
            continue
        names.add(m.group(1))
    return names


def dashboard_problems(dashboard: dict) -> list:
    problems = []
    variables = {v["name"]: v for v in dashboard.get("templating", {}).get("list", [])}
    ds = variables.get("datasource", {})
    if ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        problems.append("no `datasource` variable of type datasource, query prometheus")
    if variables.get("instance", {}).get("type") != "query":
        problems.append("no `instance` query variable")
    exprs = dashboard_exprs(dashboard)
    if not exprs:
        problems.append("no PromQL expressions")
    for title, expr in exprs:
        unknown = metric_names(expr) - METRICS
        if unknown:
            problems.append(f"panel {title!r}: unknown metric names {sorted(unknown)} in {expr}")
        if not metric_names(expr):
            problems.append(f"panel {title!r}: no warmfs metric in {expr}")
        if '$instance' not in expr and '${instance}' not in expr:
            problems.append(f"panel {title!r}: not filtered by $instance: {expr}")
    ids = [p.get("id") for p in dashboard.get("panels", [])]
    if len(ids) != len(set(ids)):
        problems.append("panel ids repeat")
    for p in dashboard.get("panels", []):
        if p.get("type") != "row" and p.get("datasource", {}).get("uid") != "${datasource}":
            problems.append(f"panel {p.get('title')!r}: datasource is not ${{datasource}}")
    return problems


def promtool_problems(case, exprs: list) -> list:
    """The expressions as recording rules, through `promtool check rules`."""
    promtool = require_tool(case, "promtool", "Debian package prometheus")
    rules = []
    for i, (_, expr) in enumerate(exprs):
        e = re.sub(r"\$__\w+", "5m", expr)  # Grafana's $__rate_interval, $__range: durations
        e = re.sub(r"\$\{?\w+\}?", ".*", e)  # dashboard variables: regex label values
        rules.append({"record": f"warmfs:dashboard_expr_{i}", "expr": e})
    with tempfile.NamedTemporaryFile("w", suffix=".yml") as f:
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)
        f.flush()
        run = subprocess.run([promtool, "check", "rules", f.name], capture_output=True,
                             text=True, timeout=60)
    return [] if run.returncode == 0 else [run.stdout + run.stderr]


