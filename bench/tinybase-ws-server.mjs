// TinyBase's WebSocket synchronization server for W8 of `make bench`:
// createWsServer over a ws WebSocketServer on a free loopback port (each
// URL path is one room of synchronized clients). It prints "PORT n" and runs
// until its standard input closes.
import {WebSocketServer} from "ws";
import {createWsServer} from "tinybase/synchronizers/synchronizer-ws-server";

const wss = new WebSocketServer({host: "127.0.0.1", port: 0});
wss.on("listening", () => console.log("PORT " + wss.address().port));
const server = createWsServer(wss);
process.stdin.on("end", async () => { await server.destroy(); process.exit(0); });
process.stdin.resume();
