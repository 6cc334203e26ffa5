// usage.ts: an app written against web/replica.d.ts, compiled by make test
// with tsc --strict (typecheck/tsconfig.json). It uses every option, method
// and event payload the implementation has, so a d.ts that drops or misnames
// one fails the build; the @ts-expect-error lines check that the typings
// refuse what the implementation refuses. It is never run.

async function app(): Promise<void> {
	await Replica.ready;
	const maxWins = (c: Replica.ResolverContext): "local" | "remote" =>
		typeof c.remoteValue === "number" && typeof c.localValue === "number" && c.remoteValue > c.localValue ? "remote" : "local";
	const db: Replica.Database = await Replica.open({
		name: "notes",
		schema: {
			tables: {
				notes: {
					columns: { title: { type: "text", notNull: true }, n: "integer", at: "timestamp", body: "json" },
					indexes: { by_n: ["n"] },
				},
			},
		},
		allowResurrection: true,
		heldChanges: "hold",
		storageQuota: 50e6,
		retentionHorizonMs: 7 * 24 * 3600 * 1000,
		batchSize: 500,
		durability: "strict",
		resolver: maxWins,
	});
	await Replica.open({ name: "other", schema: { tables: { t: { columns: { v: "real" } } } }, resolver: "localWins" });
	await Replica.open({ name: "other", schema: { tables: { t: { columns: { v: "real" } } } }, worker: true });
	// @ts-expect-error worker is a boolean
	await Replica.open({ name: "x", schema: { tables: {} }, worker: "yes" });
	// @ts-expect-error unknown durability
	await Replica.open({ name: "x", schema: { tables: {} }, durability: "always" });
	// @ts-expect-error unknown option
	await Replica.open({ name: "x", schema: { tables: {} }, bogus: 1 });

	const row: Replica.Row = await db.insert("notes", { title: "hello", n: 1, at: new Date(), body: { tags: ["a"] } });
	const id = row.id as string;
	await db.update("notes", id, { n: 2 });
	await db.upsert("notes", { id, title: "again" });
	const got: Replica.Row | undefined = await db.get("notes", id);
	const rows: Replica.Row[] = await db.query("notes", { where: { n: { gte: 1 } }, orderBy: "-$updatedAt", limit: 10, system: true });
	const trash: Replica.Row[] = await db.query("notes", { deleted: true, orderBy: "-$deletedAt" });
	const pending: unknown = rows[0]?.["$pending"];
	const count: number = await db.count("notes", { where: { title: { prefix: "he" } } });
	await db.transaction(async (tx: Replica.Transaction) => {
		await tx.insert("notes", { title: "in a transaction" });
		await tx.delete("notes", id);
	});

	const stop: () => void = db.subscribe("notes", { system: true }, (live: Replica.Row[]) => void live.length, (e: Replica.ReplicaError) => void e.code);
	stop();

	db.on("change", (e: Replica.ChangeEvent) => {
		const when: number = e.at;
		for (const c of e.changes ?? []) {
			const info: Replica.RowChangeInfo = c;
			void [info.table, info.pk, info.columns, info.deleted, info.priorRow, when];
		}
	});
	db.on("conflict", (e: Replica.ConflictEvent) => void [e.localSiteId, e.remoteSiteId, e.remotePriorValue, e.remotePriorHlc, e.remoteWon]);
	db.on("held", (e: Replica.HeldEvent) => void [e.reason, e.policy, e.changes]);
	db.on("heldReplayed", (e: Replica.HeldReplayedEvent) => void [e.table, e.changes, e.remaining]);
	db.on("syncState", (s: Replica.SyncState) => void [s.status, s.pending, s.lastError?.code]);
	db.on("leaderChange", (e: Replica.LeaderChangeEvent) => void e);
	// @ts-expect-error unknown event
	db.on("changed", () => {});

	await db.dropIndex("notes", "by_n");
	await db.dropColumn("notes", "body");
	await db.dropTable("old_notes");
	await db.alterColumn("notes", "n", { notNull: true, default: 0 });
	await db.alterColumn("notes", "title", { dropDefault: true });
	await db.renameTable("notes", "memos");
	// @ts-expect-error the new name is a string
	await db.renameTable("memos", 7);
	// @ts-expect-error a column's type cannot change
	await db.alterColumn("notes", "n", { type: "text" });
	const stats: Replica.HeldStats = await db.heldChanges();
	void stats.tables["notes"]?.unknownColumn;

	// db.inspect: the inspector's reads
	const tables: Replica.InspectTable[] = await db.inspect.tables({ counts: false });
	void tables[0]?.columns[0]?.type;
	const counted: { rows: number; deleted: number } = await db.inspect.count("notes");
	void counted;
	const rowsPage: Replica.InspectRowsPage = await db.inspect.rows("notes", { search: "lis", prefix: true, limit: 100, deleted: false, maxScan: 10000 });
	const cell: Replica.CellVersion | undefined = rowsPage.rows[0]?.cells["title"];
	void [cell?.hlc, cell?.siteId, cell?.at, rowsPage.rows[0]?.tombstone?.hlc, rowsPage.next, rowsPage.scanned];
	if (rowsPage.next !== null) await db.inspect.rows("notes", { after: rowsPage.next });
	const logPage: Replica.ChangeLogPage = await db.inspect.changeLog({ unsent: true, limit: 20 });
	void [logPage.entries[0]?.unsent, logPage.entries[0]?.tables, logPage.sentWatermark];
	const heldPage: Replica.HeldChangesPage = await db.inspect.heldChanges({ table: "notes" });
	const reason: Replica.HeldReason | undefined = heldPage.changes[0]?.reason;
	void reason;
	const inspectSync: Replica.InspectSync = await db.inspect.sync();
	void [inspectSync.state[0]?.name, inspectSync.status.status, inspectSync.unsent];
	const stopConflicts: () => void = db.inspect.conflicts((c) => void [c.column, c.fromOtherTab]);
	stopConflicts();
	const win: Window | null = db.inspect.open({ url: "http://127.0.0.1:8080/inspect" });
	void win;
	// @ts-expect-error rows takes no orderBy
	await db.inspect.rows("notes", { orderBy: "title" });
	const byName: Replica.Database = await Replica.open({ name: "notes" }); // the stored schema
	void byName;

	await db.sync.connect(["wss://a.example/sync", "wss://b.example/sync"], { database: "notes", token: "t" });
	await db.sync.connect("wss://a.example/sync", { database: "sealed", key: await Replica.deriveKey({ passphrase: "correct horse", database: "sealed" }) });
	await db.sync.pushed();
	await db.sync.requestSnapshot();
	const state: Replica.SyncState = db.sync.state;
	await db.sync.disconnect();

	const page: Replica.ChangesPage = await db.changesSince(null, { limit: 100 });
	const next: string = page.next;
	const res: Replica.ApplyResult = await db.applyChanges(JSON.stringify(page.changeSets));
	await db.applyChanges(page.changeSets);
	// @ts-expect-error changesSince takes no onlyLocal (a browser replica returns its own transactions)
	await db.changesSince(next, { onlyLocal: true });

	try {
		await db.insert("notes", {});
	} catch (e) {
		if (e instanceof Replica.ReplicaError) {
			const code: Replica.ErrorCode = e.code;
			switch (code) {
				case "VALIDATION":
				case "CLOCK_DRIFT":
				case "QUOTA_EXCEEDED":
					break;
			}
		}
	}
	void [got, trash, pending, count, state, res, db.siteId, db.isLeader, db.persisted, db.name];
	await db.close();
}

void app;
