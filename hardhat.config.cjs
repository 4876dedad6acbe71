module.exports = { solidity: '0.8.24' };
