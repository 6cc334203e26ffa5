// The package as an app bundled by Vite uses it: import, open, write, read,
// subscribe, and sync when a relay is named (?relay=ws://127.0.0.1:8080/sync).
// ?worker runs the engine in a Worker (Replica.open's worker option).
import { Replica } from "@replica-sync/replica";

const params = new URLSearchParams(location.search);

const status = document.getElementById("status");
const list = document.getElementById("notes");

const db = await Replica.open({
  name: "vite-notes",
  worker: !params.has("page"), // the engine in a Worker (the default); ?page: on the page's thread
  schema: { tables: { notes: { columns: { text: { type: "text", notNull: true }, at: "timestamp" } } } },
});

db.subscribe("notes", { orderBy: "-at", limit: 50 }, (rows) => {
  list.replaceChildren(...rows.map((r) => {
    const li = document.createElement("li");
    li.textContent = r.text;
    return li;
  }));
});

document.getElementById("add").addEventListener("submit", async (e) => {
  e.preventDefault();
  const input = document.getElementById("text");
  await db.insert("notes", { text: input.value, at: new Date() });
  input.value = "";
});

const relay = params.get("relay");
if (relay) {
  db.on("syncState", (s) => { status.textContent = "Sync: " + s.status; });
  await db.sync.connect(relay, { database: "vite-notes" });
} else {
  status.textContent = `Ready: ${await db.count("notes")} notes on this device (add ?relay=ws://127.0.0.1:8080/sync to sync).`;
}
window.replicaExample = { db, ready: true };
