// chat-delivery-hub support console: native ES modules, no build step. Each module is one concern (see
// docs/console-page.md); this one wires them up and starts the page. Operator notes: docs/console.md.
import { startTicking } from "./clocks.js";
import { setUpComposer } from "./composer.js";
import { setUpConversation } from "./conversation.js";
import { setUpList } from "./list.js";
import { resumeSession, setUpSession } from "./session.js";
import { setUpTeam } from "./team.js";

setUpList();
setUpConversation();
setUpComposer();
setUpTeam();
setUpSession();
startTicking();
resumeSession();
document.documentElement.setAttribute("data-console", "ready");
