// n8n loads the nodes listed in package.json's "n8n" section; nothing to export.
module.exports = {};
